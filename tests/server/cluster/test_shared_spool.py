"""Where each partition's input goes when a job is accepted: the database row, the shared spool, or a 413."""
from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
import pytest

from pipeline.server.cluster.pg_store import PartitionInput
from pipeline.server.cluster.service import stage_partition_inputs
from pipeline.server.cluster.shared_spool import SharedSpool
from pipeline.server.errors import ApiError
from pipeline.server.uploads import INPUTS_FILE, Upload, partition_file


def upload(folder: Path, sizes: list[int]) -> Upload:
    folder.mkdir(parents=True)
    for i, size in enumerate(sizes):
        (folder / partition_file(i)).write_bytes(bytes([i]) * size)
    return Upload(folder.name, key=None, priority="normal", request_id=None, input_kind="wtns", n_partitions=len(sizes))


def test_small_inputs_stay_in_the_row_and_large_ones_go_to_the_shared_spool(tmp_path):
    shared = SharedSpool(tmp_path / "shared")
    job = upload(tmp_path / "up" / "job1", [10, 100, 10])
    staged = stage_partition_inputs(tmp_path / "up" / "job1", job, 50, shared)
    assert staged[0] == PartitionInput(data=b"\x00" * 10) and staged[2] == PartitionInput(data=b"\x02" * 10)
    assert staged[1] == PartitionInput(spool_file="job1/part-00001.wtns")
    assert shared.path(staged[1].spool_file).read_bytes() == b"\x01" * 100


def test_a_large_input_without_a_shared_spool_is_refused_by_name(tmp_path):
    job = upload(tmp_path / "up" / "job2", [10, 100])
    with pytest.raises(ApiError) as refused:
        stage_partition_inputs(tmp_path / "up" / "job2", job, 50, None)
    assert refused.value.status == 413 and "partition 1 is 100 bytes" in refused.value.message
    assert "shared_spool_dir" in refused.value.message


def test_circuit_inputs_travel_as_one_json_object_per_partition(tmp_path):
    folder = tmp_path / "up" / "job3"
    folder.mkdir(parents=True)
    (folder / INPUTS_FILE).write_bytes(orjson.dumps([{"a": "3"}, {"a": "4", "b": "5"}]))
    job = Upload("job3", key=None, priority="normal", request_id=None, input_kind="inputs", n_partitions=2)
    staged = stage_partition_inputs(folder, job, 1 << 20, None)
    assert [orjson.loads(s.data) for s in staged] == [{"a": "3"}, {"a": "4", "b": "5"}]


def test_spool_names_never_leave_the_jobs_folder(tmp_path):
    shared = SharedSpool(tmp_path / "shared")
    for bad in ("../x/part-00000.wtns", "job/../../etc/passwd", "job/sub/part-0.wtns", "job/other.txt"):
        with pytest.raises(ValueError):
            shared.path(bad)


def test_only_old_folders_are_offered_to_the_janitor(tmp_path):
    shared = SharedSpool(tmp_path / "shared")
    shared.store("old", 0, data=b"x")
    shared.store("new", 0, data=b"y")
    past = time.time() - 3600
    os.utime(shared.jobs_root / "old", (past, past))
    assert shared.candidates(grace_s=600) == ["old"]
    shared.discard("old")
    assert sorted(p.name for p in shared.jobs_root.iterdir()) == ["new"]
