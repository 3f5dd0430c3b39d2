"""The key store: proving keys registered by id, loaded once, kept resident, evicted LRU.

Two levels, each under its own budget:

- host: the parsed zkey (numpy arrays; read-only maps of its files when it came prepared from
  the key cache, ``pipeline.keycache``, which the ``keys`` executor consults), the optional .r1cs (witness checks), the compiled
  circom wasm (witness synthesis) and, with the G2 MSM on the CPU, the decoded B2 points.
  Loaded once in the "keys" executor, counted against ``key_host_budget_bytes``. A key with
  partitions in flight (reference count > 0) is never evicted; idle keys go least recently
  used first when a load needs room.
- device: ``backend.load_key`` per device, counted against that device's VRAM budget, placed
  by ``backend.place_key(zkey, budget)``: all resident when the key and a partition's scratch
  fit, else hot sections resident and the rest streamed from host memory (the snapshot says
  which: "resident", "partly resident", "streamed"). Device copies are made
  and dropped only by the holder of that device's GPU lock (DESIGN rule 1: VRAM belongs to
  whoever holds the lock), so a copy is never dropped while its kernels run. Idle keys' copies
  go first; then, if still short, copies of other keys (their next partition reloads them).
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..backends import host_backend
from ..backends.protocol import Backend, KeyPlacement, WitnessShape
from ..errors import BadInput, ZkpipeError
from ..formats.types import Groth16Zkey, R1cs
from ..keycache import KeyCacheSettings
from .budgets import BudgetTooSmall, ByteBudget
from .devices import Device


Runner = Callable[..., Awaitable[Any]]


class UnknownKey(BadInput, KeyError):
    def __str__(self) -> str:
        return f"no proving key registered as {self.args[0]!r}"


class KeyInUse(ZkpipeError):
    """The key is referenced by partitions in flight (evict refused)."""


class KeyLoadError(BadInput):
    """A registered key's files could not be loaded or do not agree with each other."""


IN_MEMORY = "<in memory>"


@dataclass(frozen=True)
class KeySpec:
    key_id: str
    zkey_path: str  # the .zkey file, or only the name of an in-memory ``zkey``
    r1cs_path: str | None = None
    wasm_path: str | None = None
    # A key given as an object (embedded use: a key just made by the development setup, too large
    # to write out): zkey_path is IN_MEMORY and the spec keeps the key alive while registered.
    # Groth16Zkey compares by identity, so two specs are equal only for the same object.
    zkey: Groth16Zkey | None = field(default=None, repr=False)

    @property
    def reloadable(self) -> bool:
        """Whether a device copy of the key can be made again once freed: not for an in-memory key whose
        points are only on the device the setup made them on (``Groth16Zkey.points_on_host``)."""
        return self.zkey is None or self.zkey.points_on_host

    def files(self) -> list[str]:
        """The files the key is read from (checked at registration)."""
        paths = (self.r1cs_path, self.wasm_path) if self.zkey is not None else \
            (self.zkey_path, self.r1cs_path, self.wasm_path)
        return [p for p in paths if p is not None]

    def check_files(self) -> None:
        for path in self.files():
            if not Path(path).is_file():
                raise FileNotFoundError(f"key {self.key_id!r}: no such file {path}")


@dataclass(frozen=True, eq=False)
class HostKey:
    """What the CPU stages need of a key (immutable once loaded; shared by all partitions)."""

    spec: KeySpec
    zkey: Groth16Zkey
    r1cs: R1cs | None
    calculator: Any  # pipeline.witness.WitnessCalculator or None
    host_g2: Any  # the host backend's handle of this key, B2 decoded, for the host G2 MSM; else None
    host_bytes: int
    delta_tables: Any = None  # groth16.prover.DeltaTables: the epilogue's blinding terms by table lookup
    r1cs_checker: Any = None  # groth16.r1cs_check.R1csChecker, prepared once when the key has an .r1cs
    prepared: dict | None = None  # keycache.PreparedKey.summary(): from the cache or prepared now, how long

    @property
    def host_backend(self) -> Backend:
        """The backend that runs the host (CPU) placement of the G2 MSM."""
        return host_backend()


@dataclass(eq=False)
class _Entry:
    spec: KeySpec
    host: HostKey | None = None
    refs: int = 0
    last_used: float = 0.0
    load_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    device_handles: dict[int, Any] = field(default_factory=dict)  # device index -> backend handle
    device_bytes: dict[int, int] = field(default_factory=dict)
    device_placement: dict[int, KeyPlacement] = field(default_factory=dict)  # how each device holds its copy
    # The shape of the key's last witness (prep_msm counts it): the tables of its next device copy are chosen
    # for witnesses like it (Backend.place_key); None until a partition of the key was prepared.
    witness_shape: WitnessShape | None = None


def placement_layout(placement: KeyPlacement) -> dict:
    """A device copy's placement for the status: resident and streamed point sections (hot ones,
    such as H, kept on the device when they fit), whether the CSR is resident or streamed, and a
    streamed H's points crossing once per partition (each one's prologue) or once per pass."""
    layout = {"resident_sections": list(placement.resident), "streamed_sections": list(placement.streamed),
              "csr": "streamed" if placement.csr_chunk_bytes else "resident"}
    if "h" in placement.streamed:
        layout["h_points"] = "per partition" if placement.h_in_prologues else "per pass"
    layout["fixed_base_sections"] = list(placement.fixed_base)
    layout["fixed_base_sets"] = list(placement.tables.values())
    layout["fixed_base_refused"] = list(placement.tables_refused)
    layout["fixed_base_order"] = list(placement.fixed_base_order)
    return layout


def load_host_key(spec: KeySpec, decode_g2: bool, key_cache: KeyCacheSettings = KeyCacheSettings()
                  ) -> HostKey:
    """Blocking: read (or open prepared from the key cache) and cross-check the key's files (runs
    in the keys executor)."""
    from ..formats.r1cs import read_r1cs
    from ..keycache import prepare_key

    if spec.zkey is not None:
        zkey, prepared = spec.zkey, {"source": "in memory"}
    else:
        from_file = prepare_key(spec.zkey_path, key_cache)
        zkey, prepared = from_file.zkey, from_file.summary()
    size = zkey.host_bytes()
    r1cs, checker = None, None
    if spec.r1cs_path:
        r1cs = read_r1cs(spec.r1cs_path)
        if r1cs.curve is not zkey.curve or r1cs.n_wires != zkey.n_vars:
            raise KeyLoadError(f"{spec.r1cs_path}: the r1cs ({r1cs.curve.name}, {r1cs.n_wires} wires) does not "
                               f"match the key {spec.zkey_path} ({zkey.curve.name}, {zkey.n_vars} signals)")
        size += sum(lc.signals.nbytes + lc.values.nbytes for c in r1cs.constraints for lc in c)
        from ..groth16.r1cs_check import R1csChecker

        checker = R1csChecker(r1cs)
        size += 16 * checker.n_terms  # an index and an object pointer per term
    calculator = None
    if spec.wasm_path:
        from ..witness import WitnessCalculator

        calculator = WitnessCalculator(spec.wasm_path)
        if calculator.curve is not zkey.curve or calculator.witness_size != zkey.n_vars:
            raise KeyLoadError(f"{spec.wasm_path}: the circuit ({calculator.curve.name}, {calculator.witness_size} "
                               f"signals) does not match the key {spec.zkey_path} ({zkey.curve.name}, {zkey.n_vars})")
        size += Path(spec.wasm_path).stat().st_size * 4  # compiled code, roughly
    host_g2 = None
    if decode_g2:
        host_g2 = host_backend().load_key(zkey)
        host_g2.points("b2")  # decoded now, in the keys executor, not at the first partition
        size += zkey.points_b2.nbytes * 3  # Python ints: about 3x the packed limbs
    tables = None
    if zkey.delta1 is not None and zkey.delta2 is not None:  # a key with δ at infinity proves nothing anyway
        from ..groth16.prover import DeltaTables

        tables = DeltaTables.for_key(zkey)
        size += 2 << 20  # ~2.7k G1 + 2.7k G2 affine points as Python ints
    return HostKey(spec, zkey, r1cs, calculator, host_g2, size, tables, checker, prepared)


class KeyStore:
    def __init__(self, host_budget_bytes: int | None, executor: Executor, g2_executor: str | None = None,
                 key_cache: KeyCacheSettings = KeyCacheSettings()) -> None:
        """``g2_executor``: where the host G2 MSM runs ("thread", "process"; None: on the device).
        Threads use the key's decoded B2 points; processes read the key file themselves, so only
        a key given in memory (no file) is decoded here for them. ``key_cache``: how keys read
        from files are prepared (pipeline.keycache)."""
        self._entries: dict[str, _Entry] = {}
        self._key_cache = key_cache
        self.host_budget = ByteBudget("key host memory", host_budget_bytes)
        self._executor = executor
        self._g2_executor = g2_executor
        self.loads = 0
        self.evictions = 0
        self.fixed_base_drops = 0  # copies that gave up their tables for room

    # -- registration ----------------------------------------------------------------------
    def register(self, spec: KeySpec) -> None:
        spec.check_files()
        old = self._entries.get(spec.key_id)
        if old is not None:
            if old.spec == spec:
                return
            if old.refs or old.device_handles:
                raise KeyInUse(f"key {spec.key_id!r} is registered with other files and is loaded; evict it first")
            if old.host is not None:
                self.host_budget.release(old.host.host_bytes)
        self._entries[spec.key_id] = _Entry(spec)

    def spec(self, key_id: str) -> KeySpec:
        return self._entry(key_id).spec

    def _entry(self, key_id: str) -> _Entry:
        try:
            return self._entries[key_id]
        except KeyError:
            raise UnknownKey(key_id) from None

    def __contains__(self, key_id: str) -> bool:
        return key_id in self._entries

    def key_ids(self) -> list[str]:
        """Every registered key id (a copy: safe to iterate while keys change)."""
        return list(self._entries)

    # -- host level ------------------------------------------------------------------------
    async def acquire(self, key_id: str) -> HostKey:
        """The key's host data, loaded if needed; the caller must ``release`` it once."""
        entry = self._entry(key_id)
        entry.refs += 1
        try:
            async with entry.load_lock:
                if entry.host is None:
                    await self._load_host(entry)
        except BaseException:
            entry.refs -= 1
            raise
        entry.last_used = time.monotonic()
        return entry.host  # type: ignore[return-value]

    def loaded(self, key_id: str) -> HostKey:
        """The host data of a key the caller holds a reference to."""
        host = self._entry(key_id).host
        if host is None:
            raise RuntimeError(f"key {key_id!r} is not loaded; acquire() it first")
        return host

    def add_ref(self, key_id: str) -> None:
        """Another reference to a key already acquired (one per admitted partition)."""
        entry = self._entry(key_id)
        if entry.host is None:
            raise RuntimeError(f"key {key_id!r} is not loaded; acquire() it first")
        entry.refs += 1

    def release(self, key_id: str) -> None:
        entry = self._entry(key_id)
        if entry.refs <= 0:
            raise RuntimeError(f"key {key_id!r} released more often than acquired")
        entry.refs -= 1
        entry.last_used = time.monotonic()
        if entry.refs == 0 and entry.host is not None and self.host_budget.waiting:
            self.drop_host(key_id)  # another key's load is waiting for room

    async def _load_host(self, entry: _Entry) -> None:
        loop = asyncio.get_running_loop()
        try:
            decode_g2 = self._g2_executor == "thread" or (self._g2_executor == "process" and entry.spec.zkey is not None)
            host = await loop.run_in_executor(self._executor, load_host_key, entry.spec, decode_g2, self._key_cache)
        except (KeyLoadError, BudgetTooSmall):
            raise
        except Exception as exc:
            raise KeyLoadError(f"key {entry.spec.key_id!r}: {exc}") from exc
        self.host_budget.check(host.host_bytes, f"key {entry.spec.key_id!r}")
        self._evict_host_for(host.host_bytes, keep=entry)
        await self.host_budget.acquire(host.host_bytes, f"key {entry.spec.key_id!r}")
        entry.host = host
        self.loads += 1

    def _evict_host_for(self, needed: int, keep: _Entry) -> None:
        budget = self.host_budget
        if budget.capacity is None:
            return
        idle = sorted((e for e in self._entries.values() if e.host is not None and e.refs == 0 and e is not keep),
                      key=lambda e: e.last_used)
        for victim in idle:
            if budget.used + needed <= budget.capacity:
                return
            budget.release(victim.host.host_bytes)  # type: ignore[union-attr]
            victim.host = None
            self.evictions += 1
        # still short: every other key is in use; acquire() waits for one to become idle

    def check_unused(self, key_id: str) -> None:
        """``KeyInUse`` if jobs hold the key (``UnknownKey`` if it is not registered)."""
        entry = self._entry(key_id)
        if entry.refs:
            raise KeyInUse(f"key {key_id!r} has {entry.refs} jobs or partitions in flight")

    def drop_host(self, key_id: str) -> bool:
        self.check_unused(key_id)
        entry = self._entry(key_id)
        if entry.host is None:
            return False
        self.host_budget.release(entry.host.host_bytes)
        entry.host = None
        self.evictions += 1
        return True

    def note_witness(self, key_id: str, shape: WitnessShape) -> None:
        """A partition of the key was prepared with a witness of this shape: the key's next device copy
        chooses its fixed-base tables for witnesses like it."""
        self._entry(key_id).witness_shape = shape

    # -- device level (call only while holding ``device``'s GPU lock) ----------------------
    # ``run(fn, *args)`` runs a blocking backend call off the loop (the device's executor);
    # the budget bookkeeping stays on the loop.
    async def device_copy(self, key_id: str, device: Device, host: HostKey, run: Runner) -> Any:
        """The key's handle on ``device``, uploading it first if needed (evicting other copies)."""
        entry = self._entry(key_id)
        entry.last_used = time.monotonic()
        handle = entry.device_handles.get(device.index)
        if handle is not None:
            return handle
        # all resident, or some sections streamed; fixed-base tables only in the room no other copy holds
        placement = await run(device.place_key, host.zkey, device.vram.available(), entry.witness_shape)
        needed = await self._reserve_vram(key_id, device, placement.device_bytes, run)
        try:
            handle = await run(device.backend.load_key, host.zkey, placement)
        except BaseException:
            device.vram.release(needed)
            raise
        entry.device_handles[device.index] = handle
        entry.device_bytes[device.index] = needed
        entry.device_placement[device.index] = placement
        self.loads += 1
        return handle

    async def adopt_device_copy(self, key_id: str, device: Device, host: HostKey, handle: Any, run: Runner) -> None:
        """Take ``handle``, the key already resident on ``device`` (made by its backend outside the
        store: ``setup.adopt_dev_key``), as the key's copy there, counted as an upload would be; the
        fixed-base tables an upload would get are built onto it (``Backend.add_fixed_bases``)."""
        entry = self._entry(key_id)
        if device.index in entry.device_handles:
            raise KeyInUse(f"key {key_id!r} already has a copy on device {device.index}")
        placement = await run(device.place_key, host.zkey, device.vram.available(), entry.witness_shape)
        if placement.mode != "resident":
            raise BudgetTooSmall(f"device {device.index}: key {key_id!r} fits its VRAM budget only {placement.mode}, "
                                 f"not as the resident copy offered; preload it instead (its backend streams the rest)")
        needed = await self._reserve_vram(key_id, device, placement.device_bytes, run)
        if placement.fixed_base:
            try:
                await run(device.backend.add_fixed_bases, handle, placement)
            except BaseException:
                device.vram.release(needed)
                raise
        entry.device_bytes[device.index] = needed
        entry.device_handles[device.index] = handle
        entry.device_placement[device.index] = placement
        entry.last_used = time.monotonic()

    async def _reserve_vram(self, key_id: str, device: Device, needed: int, run: Runner) -> int:
        """``needed`` bytes of ``device``'s VRAM budget for the key's copy (other copies evicted for room)."""
        device.vram.check(needed, f"key {key_id!r}")
        await self.make_device_room(device, needed, keep=key_id, run=run)
        if not device.vram.try_acquire(needed):
            raise BudgetTooSmall(f"device {device.index}: VRAM budget {device.vram.capacity} cannot hold key "
                                 f"{key_id!r} ({needed} bytes) next to {device.vram.used} bytes in use")
        return needed

    async def make_device_room(self, device: Device, needed: int, keep: str, run: Runner) -> None:
        """Make ``needed`` bytes fit on ``device``: other keys' copies first give up their fixed-base
        tables (back to plain points, ``Backend.drop_fixed_bases``), then are evicted; idle keys first,
        then least recently used. A copy that could not be made again (``KeySpec.reloadable``) is never
        evicted for room (``evict`` by hand still frees it): ``BudgetTooSmall`` names those kept where the
        room is still short."""
        vram = device.vram
        if vram.capacity is None:
            return
        resident = [e for e in self._entries.values() if device.index in e.device_handles and e.spec.key_id != keep]
        resident.sort(key=lambda e: (e.refs > 0, e.last_used))
        for victim in resident:
            if vram.used + needed <= vram.capacity:
                return
            await self.drop_fixed_bases(victim.spec.key_id, device, run)
        for victim in (e for e in resident if e.spec.reloadable):
            if vram.used + needed <= vram.capacity:
                return
            await self.unload_from_device(victim.spec.key_id, device, run)
        kept = [e.spec.key_id for e in resident if not e.spec.reloadable]
        if kept and vram.used + needed > vram.capacity:
            raise BudgetTooSmall(f"device {device.index}: {needed} bytes for key {keep!r} do not fit its VRAM budget "
                                 f"({vram.used} of {vram.capacity} in use) beside the copies of "
                                 f"{', '.join(map(repr, kept))}, kept because their points are only on this device "
                                 f"(they could not be loaded again)")

    async def drop_fixed_bases(self, key_id: str, device: Device, run: Runner) -> bool:
        """The key's copy on ``device`` without its fixed-base tables (under the device's lock); its
        budget shrinks by what they held. False where it has none."""
        entry = self._entry(key_id)
        placement = entry.device_placement.get(device.index)
        if placement is None or not placement.fixed_base:
            return False
        freed = await run(device.backend.drop_fixed_bases, entry.device_handles[device.index])
        entry.device_placement[device.index] = placement.without_tables(freed)
        entry.device_bytes[device.index] -= freed
        device.vram.release(freed)
        self.fixed_base_drops += 1
        return True

    async def unload_from_device(self, key_id: str, device: Device, run: Runner) -> bool:
        """Free the key's copy on ``device`` (under the device's lock)."""
        entry = self._entry(key_id)
        handle = entry.device_handles.pop(device.index, None)
        if handle is None:
            return False
        try:
            await run(device.backend.unload_key, handle)
        finally:
            device.vram.release(entry.device_bytes.pop(device.index, 0))
            entry.device_placement.pop(device.index, None)
            self.evictions += 1
        return True

    def resident_handle(self, key_id: str, device_index: int) -> Any:
        """The key's handle on that device when its copy there is wholly resident (else None): a
        witness prefetched ahead of the GPU lock goes only to such a key's partition."""
        entry = self._entries.get(key_id)
        placement = entry.device_placement.get(device_index) if entry else None
        return entry.device_handles.get(device_index) if placement is not None and placement.mode == "resident" \
            else None

    def resident_devices(self, key_id: str) -> set[int]:
        entry = self._entries.get(key_id)
        return set(entry.device_handles) if entry else set()

    # -- status ----------------------------------------------------------------------------
    def snapshot(self) -> dict:
        keys = {}
        for key_id, e in self._entries.items():
            keys[key_id] = {"zkey_path": e.spec.zkey_path, "host_resident": e.host is not None,
                            "host_bytes": e.host.host_bytes if e.host else 0, "refs": e.refs,
                            "devices": sorted(e.device_handles),
                            # False: its points are only on the devices above (never evicted for room)
                            "reloadable": e.spec.reloadable,
                            "placement": {str(d): p.mode for d, p in sorted(e.device_placement.items())},
                            # which point sections each device keeps, which it streams, and the CSR's
                            "layout": {str(d): placement_layout(p) for d, p in sorted(e.device_placement.items())},
                            "prepared": e.host.prepared if e.host else None}  # keycache: from the cache? how long
        return {"keys": keys, "host_budget": self.host_budget.snapshot(), "loads": self.loads,
                "evictions": self.evictions, "fixed_base_drops": self.fixed_base_drops}
