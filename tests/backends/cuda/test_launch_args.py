"""Kernel parameters packed into one buffer: what the driver reads back through the pointer table
is each argument in its C type, and a launch hands the driver that table."""
import ctypes
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda import kernels as kernels_module
from pipeline.backends.cuda.kernels import SIGNATURES, CurveKernels
from pipeline.backends.cuda.launch_args import FR, I32, PTR, U32, U64, ArgLayout
from pipeline.curves import BLS12_381

_CTYPES = {PTR: ctypes.c_uint64, U64: ctypes.c_uint64, U32: ctypes.c_uint32, I32: ctypes.c_int32}


def _read_back(signature, params: int, fr_bytes: int) -> list:
    """What cuLaunchKernel reads: parameter i at the address in slot i of the table."""
    pointers = (ctypes.c_uint64 * len(signature)).from_address(params)
    out = []
    for kind, address in zip(signature, pointers):
        if kind == FR:
            out.append(np.frombuffer(ctypes.string_at(address, fr_bytes), dtype=np.uint64).tolist())
        else:
            out.append(_CTYPES[kind].from_address(address).value)
    return out


def _random_args(rng, signature, limbs):
    args = []
    for kind in signature:
        if kind == FR:
            args.append(rng.integers(0, 2**64 - 1, size=limbs, dtype=np.uint64, endpoint=True))
        elif kind in (PTR, U64):
            args.append(int(rng.integers(0, 2**64 - 1, dtype=np.uint64, endpoint=True)))
        elif kind == U32:
            args.append(int(rng.integers(0, 2**32 - 1, endpoint=True)))
        else:
            args.append(int(rng.integers(-2**31, 2**31 - 1, endpoint=True)))
    return args


def _expected(signature, args):
    return [np.asarray(a, dtype=np.uint64).tolist() if kind == FR else int(a) for kind, a in zip(signature, args)]


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_every_signature_reads_back_as_packed(name):
    rng = np.random.default_rng(len(name))
    signature, limbs = SIGNATURES[name], BLS12_381.fr.limbs
    layout = ArgLayout(signature, 8 * limbs)
    for _ in range(3):  # the buffer is refilled in place: each pack reads back as itself
        args = _random_args(rng, signature, limbs)
        assert _read_back(signature, layout.pack(tuple(args)), 8 * limbs) == _expected(signature, args)


def test_edge_values_and_numpy_scalars_pack_exactly():
    signature = (PTR, U32, I32, I32, U64, FR)
    layout = ArgLayout(signature, 32)
    args = (np.uint64(2**64 - 1), np.uint32(2**32 - 1), -2**31, np.int64(2**31 - 1), 0, [1, 0, 0, 2**63])
    assert _read_back(signature, layout.pack(args), 32) == [2**64 - 1, 2**32 - 1, -2**31, 2**31 - 1, 0,
                                                            [1, 0, 0, 2**63]]


def test_an_fr_argument_packed_ahead_as_bytes_is_taken_as_it_is():
    """NttRunner._fr_arg keeps a scale's limbs as bytes: they pack as the limbs would, and bytes of the wrong
    length are refused as a wrong limb count is."""
    signature = (PTR, FR)
    layout = ArgLayout(signature, 32)
    limbs = np.array([5, 0, 2**63, 7], dtype=np.uint64)
    assert _read_back(signature, layout.pack((1, limbs.tobytes())), 32) == [1, [5, 0, 2**63, 7]]
    with pytest.raises(ValueError, match="24 bytes, 32 expected"):
        layout.pack((1, limbs[:3].tobytes()))


@pytest.mark.parametrize("args, error", [
    ((1, 2), TypeError),                          # too few
    ((1, 2, 3, 4), TypeError),                    # too many
    ((-1, 0, [0, 0, 0, 0]), OverflowError),       # a negative pointer
    ((1, 2**32, [0, 0, 0, 0]), OverflowError),    # past u32
    ((1, 0, [0, 0, 0]), ValueError),              # an Fr element of three limbs
    ((1, 0, [0, 0, 0, 0, 0]), ValueError),        # or five
])
def test_bad_arguments_raise_naming_the_problem(args, error):
    with pytest.raises(error):
        ArgLayout((PTR, U32, FR), 32).pack(args)


def test_each_thread_packs_into_its_own_buffer():
    signature = (PTR, I32)
    layout = ArgLayout(signature, 32)
    barrier, seen = threading.Barrier(2), {}

    def worker(value):
        params = layout.pack((value, -value))
        barrier.wait()  # both have packed before either reads
        seen[value] = _read_back(signature, params, 32)

    threads = [threading.Thread(target=worker, args=(v,)) for v in (7, 11)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {7: [7, -7], 11: [11, -11]}


def test_a_launch_hands_the_driver_the_packed_table(monkeypatch):
    launched = []

    def cu_launch_kernel(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        sig = SIGNATURES["ntt_pass"]
        launched.append((function, gx, bx, shared, stream, _read_back(sig, params, 32)))
        return (0,)

    raised = []
    attribute = SimpleNamespace(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES="max dynamic shared")
    monkeypatch.setattr(kernels_module, "driver", SimpleNamespace(
        cuLaunchKernel=cu_launch_kernel, CUfunction_attribute=attribute,
        cuFuncSetAttribute=lambda function, what, value: raised.append((function, what, value)) or (0,)))
    monkeypatch.setattr(kernels_module, "check", lambda result, *what: None)
    kernels = CurveKernels.__new__(CurveKernels)
    kernels.curve, kernels.sync_after_launch = BLS12_381, False
    kernels._layouts, kernels._functions = {}, {"ntt_pass<fr_t, false, 2, true>": "the function"}
    kernels._shared_limits = {}
    stream = SimpleNamespace(handle="the stream", note_launch=lambda expr: None)
    args = (0x1000, 0x2000, 0x3000, 0, 8, 2, 20, 1, 0, 20, np.array([5, 6, 7, 8], dtype=np.uint64), 1)
    kernels.launch("ntt_pass<fr_t, false, 2, true>", 1024, 256, args, stream, 32768)
    assert launched == [("the function", 1024, 256, 32768, "the stream",
                         [0x1000, 0x2000, 0x3000, 0, 8, 2, 20, 1, 0, 20, [5, 6, 7, 8], 1])]
    with pytest.raises(TypeError, match="ntt_pass<fr_t, false, 2, true>: 12 arguments expected, 11 given"):
        kernels.launch("ntt_pass<fr_t, false, 2, true>", 1, 1, args[:-1], stream)
    assert raised == []  # 32 KiB: within the default 48
    for shared in (65536, 65536, 49152):  # past it: the kernel's limit raised once, then enough
        kernels.launch("ntt_pass<fr_t, false, 2, true>", 1, 1, args, stream, shared)
    assert raised == [("the function", "max dynamic shared", 65536)] and launched[-1][3] == 49152


def test_a_dependent_launch_goes_through_launch_kernel_ex_with_its_config_kept(monkeypatch):
    """launch(dependent=True): cuLaunchKernelEx with the programmatic-serialisation attribute on a configuration
    of the launch's shape and stream, built once per shape and stream; the packed table as for cuLaunchKernel."""
    launched, made = [], []

    class Config(SimpleNamespace):
        def __init__(self):
            super().__init__()
            made.append(self)

    def cu_launch_kernel_ex(config, function, params, extra):
        launched.append((config, function, _read_back(SIGNATURES["ntt_pass"], params, 32)))
        return (0,)

    ids = SimpleNamespace(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION="programmatic serialisation")
    monkeypatch.setattr(kernels_module, "driver", SimpleNamespace(
        cuLaunchKernelEx=cu_launch_kernel_ex, CUlaunchConfig=Config, CUlaunchAttributeID=ids,
        CUlaunchAttribute=lambda: SimpleNamespace(value=SimpleNamespace()),
        cuLaunchKernel=lambda *a: pytest.fail("an ordinary launch")))
    monkeypatch.setattr(kernels_module, "check", lambda result, *what: None)
    kernels = CurveKernels.__new__(CurveKernels)
    kernels.curve, kernels.sync_after_launch = BLS12_381, False
    kernels._layouts, kernels._functions = {}, {"ntt_pass<fr_t, false, 2, true>": "the function"}
    kernels._shared_limits, kernels._dependent_configs = {}, {}
    stream = SimpleNamespace(handle="the stream", note_launch=lambda expr: None)
    args = (0x1000, 0x2000, 0x3000, 0, 8, 2, 20, 1, 0, 20, np.array([5, 6, 7, 8], dtype=np.uint64), 1)
    for grid in (1024, 1024, 2048):
        kernels.launch("ntt_pass<fr_t, false, 2, true>", grid, 256, args, stream, 32768, dependent=True)
    assert len(made) == 2 and [c for c, _, _ in launched] == [made[0], made[0], made[1]]
    config = made[0]
    assert (config.gridDimX, config.gridDimY, config.gridDimZ, config.blockDimX, config.blockDimY,
            config.blockDimZ) == (1024, 1, 1, 256, 1, 1)
    assert (config.sharedMemBytes, config.hStream, config.numAttrs) == (32768, "the stream", 1)
    (attribute,) = config.attrs
    assert attribute.id == "programmatic serialisation" and attribute.value.programmaticStreamSerializationAllowed == 1
    assert all(f == "the function" for _, f, _ in launched)
    assert launched[0][2] == [0x1000, 0x2000, 0x3000, 0, 8, 2, 20, 1, 0, 20, [5, 6, 7, 8], 1]
