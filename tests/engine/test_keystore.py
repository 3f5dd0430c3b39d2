"""The key store: loaded once, LRU eviction under host and VRAM budgets, keys in use kept."""
from __future__ import annotations

import asyncio
import threading

import pytest

from pipeline.engine import Engine, EngineConfig, KeyInUse, KeyLoadError
from pipeline.engine.budgets import BudgetTooSmall
from pipeline.engine.keystore import KeySpec, load_host_key
from tests.engine.conftest import factory_for, key_files, until, wtns

A, B = ("bn128", "multiplier"), ("bn128", "chain_2e8")


def host_size(curve_circuit) -> int:
    files = {k: str(v) for k, v in key_files(*curve_circuit).items()}
    return load_host_key(KeySpec("x", **files), decode_g2=False).host_bytes


def engine_with(backend, **overrides) -> Engine:
    settings = dict(backend="cpu", gpu_workers_per_device=2, vram_budget_bytes=1500, check_r1cs=False)
    settings.update(overrides)
    engine = Engine(EngineConfig(**settings), backend_factory=factory_for(backend))
    return engine


async def test_a_key_is_loaded_once_for_many_jobs(fake_device):
    allocator, backend = fake_device
    async with engine_with(backend) as engine:
        engine.register_key("a", **key_files(*A))
        for _ in range(3):
            await (await engine.submit("a", [wtns(*A)] * 2)).result()
        snap = engine.status()["keys"]
        assert snap["loads"] == 2 and backend.loaded == 1  # one host load, one device upload
    assert snap["keys"]["a"]["devices"] == [0] and backend.loaded == 0  # unloaded at shutdown


async def test_host_budget_for_one_key_evicts_the_least_recently_used_idle_key(fake_device):
    allocator, backend = fake_device
    budget = max(host_size(A), host_size(B)) + 1
    async with engine_with(backend, key_host_budget_bytes=budget) as engine:
        engine.register_key("a", **key_files(*A))
        engine.register_key("b", **key_files(*B))
        await (await engine.submit("a", [wtns(*A)])).result()
        await (await engine.submit("b", [wtns(*B)])).result()
        keys = engine.status()["keys"]
    assert not keys["keys"]["a"]["host_resident"] and keys["keys"]["b"]["host_resident"]
    assert keys["host_budget"]["peak_bytes"] <= budget and keys["evictions"] >= 1


async def test_a_key_in_use_is_never_evicted_another_key_waits_for_it(fake_device):
    allocator, backend = fake_device
    kernels_may_end = threading.Event()  # job a stays in its gpu stage until the test has looked

    def hold_the_kernels():
        assert kernels_may_end.wait(30), "the test never let job a's kernels end"

    backend.during_compute = hold_the_kernels
    budget = max(host_size(A), host_size(B)) + 1
    async with engine_with(backend, key_host_budget_bytes=budget) as engine:
        engine.register_key("a", **key_files(*A))
        engine.register_key("b", **key_files(*B))
        job_a = await engine.submit("a", [wtns(*A)] * 2)
        submit_b = asyncio.create_task(engine.submit("b", [wtns(*B)]))
        await until(lambda: engine.keystore.host_budget.waiting == 1, "key b's load to wait for room")
        assert not submit_b.done() and engine.status()["keys"]["keys"]["a"]["host_resident"]
        with pytest.raises(KeyInUse):
            await asyncio.wait_for(engine.evict("a"), 10)  # at once: not after the GPU lock, copies kept
        assert engine.keystore.resident_devices("a") == {0}
        kernels_may_end.set()
        await job_a.result()
        job_b = await submit_b
        await job_b.result()
        assert job_a.finished_at <= job_b.created


async def test_vram_budget_for_one_key_swaps_keys_on_the_device_without_running_out(fake_device):
    allocator, backend = fake_device  # 1500 bytes: one 1000-byte key plus one 500-byte scratch
    async with engine_with(backend) as engine:
        engine.register_key("a", **key_files(*A))
        engine.register_key("b", **key_files(*B))
        for key, files in [("a", A), ("b", B), ("a", A)]:
            await (await engine.submit(key, [wtns(*files)] * 2)).result()
            assert engine.keystore.resident_devices(key) == {0}
        assert engine.keystore.resident_devices("b") == set()
    assert allocator.ooms == 0 and allocator.peak <= 1500


async def test_preload_and_evict(fake_device):
    allocator, backend = fake_device
    async with engine_with(backend) as engine:
        engine.register_key("a", **key_files(*A))
        await engine.preload("a")
        assert allocator.used == 1000 and engine.status()["keys"]["keys"]["a"]["host_resident"]
        await engine.evict("a")
        assert allocator.used == 0 and not engine.status()["keys"]["keys"]["a"]["host_resident"]


async def test_files_that_do_not_belong_together_are_refused_at_load(fake_device):
    allocator, backend = fake_device
    async with engine_with(backend) as engine:
        engine.register_key("mixed", zkey_path=key_files(*A)["zkey_path"], r1cs_path=key_files(*B)["r1cs_path"])
        with pytest.raises(KeyLoadError, match="does not match the key"):
            await engine.submit("mixed", [wtns(*A)])



async def test_a_device_copy_made_outside_the_store_is_adopted_without_a_load(fake_device):
    """A development key never written to a file: registered from memory, its device copy made by
    the device's backend outside the store (setup.adopt_dev_key does so on the GPU) taken as is,
    counted, and unloaded at shutdown."""
    from pipeline.formats.zkey import read_zkey

    allocator, backend = fake_device
    zkey = read_zkey(key_files(*A)["zkey_path"])
    async with engine_with(backend) as engine:
        engine.register_key("mem", zkey=zkey)
        handle = engine.devices[0].backend.load_key(zkey)
        await engine.adopt_device_key("mem", handle)
        with pytest.raises(KeyInUse, match="already has a copy on device 0"):
            await engine.adopt_device_key("mem", handle)
        await (await engine.submit("mem", [wtns(*A)] * 2)).result()
        status = engine.status()
        assert backend.loaded == 1 and status["keys"]["loads"] == 1  # the host level only: no upload
        assert status["devices"][0]["vram"]["used_bytes"] == 1000
        assert status["keys"]["keys"]["mem"]["placement"] == {"0": "resident"}
        assert status["keys"]["keys"]["mem"]["layout"]["0"] == {"resident_sections": ["a", "b1", "b2", "c", "h"],
                                                                "streamed_sections": [], "csr": "resident",
                                                                "fixed_base_sections": [], "fixed_base_sets": [],
                                                                "fixed_base_refused": [], "fixed_base_order": []}
    assert backend.loaded == 0 and allocator.used == 0


async def test_a_resident_copy_is_refused_where_the_key_must_stream(fake_device):
    from pipeline.backends.placement import KeyPlacement
    from pipeline.formats.zkey import read_zkey

    allocator, backend = fake_device
    backend.place_key = lambda zkey, budget, room=None, witness=None: KeyPlacement(
        resident=(), chunk_signals=64, chunk_h=64, device_bytes=10)
    zkey = read_zkey(key_files(*A)["zkey_path"])
    async with engine_with(backend) as engine:
        engine.register_key("mem", zkey=zkey)
        with pytest.raises(BudgetTooSmall, match="only streamed, not as the resident copy offered; preload it"):
            await engine.adopt_device_key("mem", object())
        assert engine.status()["devices"][0]["vram"]["used_bytes"] == 0


class TableBackend:
    """A FakeBackend whose keys take a fixed-base table of ``table`` bytes where ``place_key``'s room has it."""

    @staticmethod
    def make(allocator, table: int):
        from pipeline.backends.placement import KeyPlacement
        from tests.engine.conftest import FakeBackend

        class Backend(FakeBackend):
            def place_key(self, zkey, budget_bytes, room_bytes=None, witness=None):
                room = budget_bytes if room_bytes is None else room_bytes
                with_table = room is not None and self.key_bytes + table + self.scratch <= room
                return KeyPlacement(device_bytes=self.key_bytes + (table if with_table else 0),
                                    fixed_base=("h",) if with_table else ())

            def load_key(self, zkey, placement=None):
                key = super().load_key(zkey, placement)
                key.tables = table if placement is not None and placement.fixed_base else 0
                self.allocator.alloc(key.tables)
                return key

            def unload_key(self, key) -> None:
                self.allocator.free(key.tables)
                super().unload_key(key)

            def add_fixed_bases(self, key, placement):
                assert not key.tables and placement.fixed_base == ("h",)
                self.allocator.alloc(table)
                key.tables = table

            def drop_fixed_bases(self, key):
                freed, key.tables = key.tables, 0
                self.allocator.free(freed)
                self.dropped += 1
                return freed

        backend = Backend(allocator, key_bytes=1000, scratch=500)
        backend.dropped = 0
        return backend


async def test_a_key_takes_tables_only_in_free_room_and_gives_them_up_before_another_key_is_evicted():
    from tests.engine.conftest import FakeDeviceAllocator

    allocator = FakeDeviceAllocator(3000)
    backend = TableBackend.make(allocator, table=800)
    async with engine_with(backend, vram_budget_bytes=3000) as engine:
        engine.register_key("a", **key_files(*A))
        engine.register_key("b", **key_files(*B))
        await (await engine.submit("a", [wtns(*A)])).result()
        keys = engine.status()["keys"]
        assert keys["keys"]["a"]["layout"]["0"]["fixed_base_sections"] == ["h"]  # 1000 + 800 + 500 fit 3000
        # b's copy: only 1200 bytes are free, so no table; its partition's scratch then needs a's table back
        await (await engine.submit("b", [wtns(*B)])).result()
        status = engine.status()
        keys = status["keys"]
        assert keys["keys"]["b"]["layout"]["0"]["fixed_base_sections"] == []
        assert keys["keys"]["a"]["layout"]["0"]["fixed_base_sections"] == []
        assert keys["fixed_base_drops"] == 1 and backend.dropped == 1 and keys["evictions"] == 0
        assert keys["keys"]["a"]["devices"] == [0] and keys["keys"]["b"]["devices"] == [0]
        assert status["devices"][0]["vram"]["used_bytes"] == 2000 and allocator.used == 2000
        await (await engine.submit("a", [wtns(*A)])).result()  # a proves on without its table
    assert allocator.ooms == 0 and allocator.used == 0


async def test_an_adopted_copy_gets_the_tables_an_upload_would_and_gives_them_up_alike():
    from pipeline.formats.zkey import read_zkey
    from tests.engine.conftest import FakeDeviceAllocator

    allocator = FakeDeviceAllocator(3000)
    backend = TableBackend.make(allocator, table=800)
    zkey = read_zkey(key_files(*A)["zkey_path"])
    async with engine_with(backend, vram_budget_bytes=3000) as engine:
        engine.register_key("mem", zkey=zkey)
        handle = backend.load_key(zkey)  # made outside the store: no tables
        await engine.adopt_device_key("mem", handle)
        status = engine.status()
        assert status["keys"]["keys"]["mem"]["layout"]["0"]["fixed_base_sections"] == ["h"]
        assert status["devices"][0]["vram"]["used_bytes"] == 1800 == allocator.used
        engine.register_key("b", **key_files(*B))
        await (await engine.submit("b", [wtns(*B)])).result()  # b's scratch takes the adopted copy's tables
        status = engine.status()
        assert status["keys"]["fixed_base_drops"] == 1 and status["keys"]["evictions"] == 0
        assert status["devices"][0]["vram"]["used_bytes"] == 2000 == allocator.used
        await (await engine.submit("mem", [wtns(*A)])).result()
    assert allocator.ooms == 0 and allocator.used == 0


async def test_a_copy_that_could_not_be_loaded_again_is_not_evicted_for_another_keys_room():
    """An adopted development key whose points are only on the device (Groth16Zkey.points_on_host False) keeps
    its copy: where another key's copy and scratch fit only in its room, that key's partition fails naming the
    key kept and why, and the kept key proves on; where they fit beside it, keys read from files are evicted
    for each other's room as before, never the kept one."""
    from pipeline.formats.zkey import read_zkey
    from tests.conftest import without_host_points
    from tests.engine.conftest import FakeBackend, FakeDeviceAllocator

    device_only = without_host_points(read_zkey(key_files(*A)["zkey_path"]))
    for budget in (2400, 2600):  # key copies of 1000, a partition's scratch 500
        allocator = FakeDeviceAllocator(budget)
        backend = FakeBackend(allocator, key_bytes=1000, scratch=500)
        async with engine_with(backend, vram_budget_bytes=budget) as engine:
            engine.register_key("mem", zkey=device_only)
            await engine.adopt_device_key("mem", backend.load_key(device_only))
            engine.register_key("b", **key_files(*B))
            engine.register_key("c", **key_files(*A))
            if budget == 2400:
                job = await engine.submit("b", [wtns(*B)])
                with pytest.raises(Exception, match=r"for key 'b' do not fit .* beside the copies of 'mem', kept "):
                    await job.result()
            else:
                await (await engine.submit("b", [wtns(*B)])).result()
                await (await engine.submit("c", [wtns(*A)])).result()  # b's copy evicted for c's
                keys = engine.status()["keys"]
                assert keys["evictions"] == 1 and keys["keys"]["b"]["devices"] == []
                assert keys["keys"]["c"]["devices"] == [0]
            keys = engine.status()["keys"]["keys"]
            assert keys["mem"]["devices"] == [0] and not keys["mem"]["reloadable"] and keys["b"]["reloadable"]
            await (await engine.submit("mem", [wtns(*A)])).result()  # its copy is still there
        assert allocator.ooms == 0 and allocator.used == 0


async def test_a_device_copy_is_placed_for_the_keys_last_witness():
    """The key store hands place_key the shape of the key's last prepared witness (its tables are chosen for
    witnesses like it: CudaBackend.fixed_base_order): none for a preload before any job, the job's witness for the
    copy its partition loads, and again after an eviction; the status shows the order a copy's tables took."""
    from pipeline.backends.placement import KeyPlacement
    from tests.engine.conftest import FakeBackend, FakeDeviceAllocator

    allocator = FakeDeviceAllocator(1500)

    class Recording(FakeBackend):
        witnesses = []

        def place_key(self, zkey, budget_bytes, room_bytes=None, witness=None):
            self.witnesses.append(witness)
            return KeyPlacement(device_bytes=self.key_bytes, fixed_base_order=("h",) if witness else ())

    backend = Recording(allocator, key_bytes=1000, scratch=500)
    async with engine_with(backend) as engine:
        engine.register_key("a", **key_files(*A))
        await engine.preload("a")
        assert backend.witnesses == [None]
        assert engine.status()["keys"]["keys"]["a"]["layout"]["0"]["fixed_base_order"] == []
        proofs = await (await engine.submit("a", [wtns(*A)])).result()
        await engine.evict("a")
        await (await engine.submit("a", [wtns(*A)])).result()
        shape = backend.witnesses[-1]
        assert len(backend.witnesses) == 2 and shape is not None and shape == backend.shapes[-1]
        assert (shape.n_one, shape.n_other) == (proofs[0].timings_ms["n_one"], proofs[0].timings_ms["n_other"])
        assert engine.status()["keys"]["keys"]["a"]["layout"]["0"]["fixed_base_order"] == ["h"]


async def test_a_preload_or_an_adoption_takes_a_witness_like_the_keys_for_its_tables():
    """``witness_like`` (a witness or its shape) stands for the key's witnesses before any partition has come: the
    copy is placed for its shape; one of another size or curve, or with a value not below r, is refused by name (the
    checks a partition's witness gets) and nothing is loaded."""
    import numpy as np

    from pipeline.backends.placement import KeyPlacement
    from pipeline.backends.protocol import WitnessShape
    from pipeline.errors import BadInput
    from pipeline.curves import BLS12_381
    from pipeline.formats.types import Witness
    from pipeline.formats.wtns import read_wtns
    from pipeline.formats.zkey import read_zkey
    from tests.engine.conftest import FakeBackend, FakeDeviceAllocator

    class Recording(FakeBackend):
        witnesses = []

        def place_key(self, zkey, budget_bytes, room_bytes=None, witness=None):
            self.witnesses.append(witness)
            return KeyPlacement(device_bytes=self.key_bytes)

    backend = Recording(FakeDeviceAllocator(1500), key_bytes=1000, scratch=500)
    witness = read_wtns(wtns(*A))
    async with engine_with(backend) as engine:
        engine.register_key("a", **key_files(*A))
        with pytest.raises(BadInput, match=r"w: witness has 3 values but the key .* expects \d+"):
            await engine.preload("a", witness_like=Witness("w", witness.curve, witness.values[:3]))
        with pytest.raises(BadInput, match=r"key 'a': witness_like has 3 values, the key expects \d+"):
            await engine.preload("a", witness_like=WitnessShape(3, 1, 1, 1, 1, 0))
        with pytest.raises(BadInput, match="w: witness is over bls12381's scalar field but the key .* is for bn128"):
            await engine.preload("a", witness_like=Witness("w", BLS12_381, witness.values))
        too_big = witness.values.copy()
        too_big[1] = np.iinfo(np.uint64).max
        with pytest.raises(BadInput, match="w: signal 1 is .* not below the scalar field's modulus r"):
            await engine.preload("a", witness_like=Witness("w", witness.curve, too_big))
        assert backend.witnesses == [] and backend.loaded == 0
        await engine.preload("a", witness_like=witness)
        prefix = read_zkey(key_files(*A)["zkey_path"]).n_public + 1
        assert backend.witnesses == [WitnessShape.of(witness.values, prefix)]
        await engine.evict("a")
        given = WitnessShape(len(witness.values), 1, 2, prefix, 1, 0)
        await engine.preload("a", witness_like=given)
        assert backend.witnesses[-1] is given
