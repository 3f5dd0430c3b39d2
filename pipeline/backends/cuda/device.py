"""One GPU: the driver initialised once, its primary context, and what the kernels need to know."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ._bindings import IMPORT_ERROR, driver
from .errors import check

_init_lock = threading.Lock()
_initialised = False


def _init_driver() -> None:
    global _initialised
    with _init_lock:
        if not _initialised:
            if IMPORT_ERROR:
                raise ImportError(IMPORT_ERROR)
            check(driver.cuInit(0), "cuInit")
            _initialised = True


def device_count() -> int:
    """GPUs visible to the driver; 0 where there is no driver or no GPU (never raises)."""
    try:
        _init_driver()
        return int(check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
    except Exception:
        return 0


@dataclass
class CudaDevice:
    ordinal: int = 0

    def __post_init__(self) -> None:
        _init_driver()
        self.handle = check(driver.cuDeviceGet(self.ordinal), "cuDeviceGet")
        self.context = check(driver.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain")
        self.activate()
        attr = driver.CUdevice_attribute
        major = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.handle),
                      "cuDeviceGetAttribute")
        minor = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.handle),
                      "cuDeviceGetAttribute")
        self.arch = f"sm_{major}{minor}"
        self.sm_count = int(check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                                               self.handle), "cuDeviceGetAttribute"))
        self.l2_bytes = int(check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, self.handle),
                                  "cuDeviceGetAttribute"))
        name = check(driver.cuDeviceGetName(64, self.handle), "cuDeviceGetName")
        self.name = name.split(b"\0")[0].decode()
        self.total_bytes = int(check(driver.cuDeviceTotalMem(self.handle), "cuDeviceTotalMem"))

    def activate(self) -> None:
        """Make this device's context current on the calling thread (executor threads too)."""
        check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def free_bytes(self) -> int:
        self.activate()
        free, _total = check(driver.cuMemGetInfo(), "cuMemGetInfo")
        return int(free)

    def synchronize(self) -> None:
        self.activate()
        check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
