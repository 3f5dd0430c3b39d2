"""A key whose points stay on the device (Groth16Zkey.points_on_host False, GpuDevSetup.run's
download_points=False): placeholders with the points' shapes and sizes take no host memory, the
key's host bytes leave them out, and every reader of points in host memory refuses the key by
name instead of reading the placeholders' zeros as points. The GPU path (adopted where it was
made, its proofs verified; an upload refused) is tests/gpu/test_engine_cuda.py's."""
from __future__ import annotations

import numpy as np
import pytest

from pipeline.backends.cpu.backend import CpuBackend
from pipeline.formats.types import POINT_SECTIONS, PointsNotOnHost, point_placeholders
from pipeline.formats.zkey import read_zkey
from pipeline.formats.zkey_writer import write_zkey
from tests.conftest import fixture_dir, without_host_points


def test_placeholders_have_the_points_sizes_and_take_no_memory():
    shapes = {"a": (1 << 27, 2, 6), "b2": (1 << 27, 2, 2, 6)}
    arrays = point_placeholders(shapes)
    for name, shape in shapes.items():
        a = arrays[name]
        assert a.shape == shape and a.dtype == np.uint64 and a.nbytes == 8 * int(np.prod(shape))
        assert a.strides == (0,) * len(shape)  # every element is one word: no memory behind 2^27 points' worth
        assert a.__array_interface__["data"][0] == arrays["a"].__array_interface__["data"][0]
        assert not a.flags.writeable


@pytest.mark.parametrize("curve", ["bn128", "bls12381"])
def test_a_key_without_its_points_on_the_host_is_refused_by_every_reader_of_them(tmp_path, curve):
    zkey = read_zkey(fixture_dir(curve, "chain_2e10") / "circuit_final.zkey")
    key = without_host_points(zkey)
    points = sum(getattr(zkey, f"points_{name}").nbytes for name in POINT_SECTIONS)
    assert key.host_bytes() == zkey.host_bytes() - points  # the placeholders are not host memory
    assert key.points_a.nbytes == zkey.points_a.nbytes  # what VRAM placement sizes read
    assert zkey.host_points("b2") is zkey.points_b2
    for section in POINT_SECTIONS:
        with pytest.raises(PointsNotOnHost, match=rf"\({section} asked for\) are only on the device"):
            key.host_points(section)
    with pytest.raises(PointsNotOnHost, match="only on the device"):
        write_zkey(tmp_path / "out.zkey", key)
    with pytest.raises(PointsNotOnHost, match="only on the device"):
        CpuBackend().load_key(key).points("a")
