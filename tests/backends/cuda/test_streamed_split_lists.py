"""A streamed pass's device split lists on the host side (streamed.CudaStreamedPass._lists_ready),
without a GPU: the host waits once for their download (time counted as the pass waiting for the
device, not queueing work), then refuses lists whose device counts differ from prep_msm's (the
chunks' MSMs would be wrong), naming both."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.backends.cuda.streamed import CudaStreamedPass, _SplitLists
from pipeline.backends.placement import HostSplit


class FakeEvent:
    def __init__(self) -> None:
        self.waits = 0

    def synchronize(self) -> None:
        self.waits += 1


def pass_with(counts, expected) -> SimpleNamespace:
    lists = _SplitLists(buffer=None, pool=None, ready=FakeEvent(),
                        split=HostSplit.of_lists(np.zeros(0, np.uint32), np.zeros(0, np.uint32), np.zeros((0, 4), np.uint64)),
                        counts=np.array(counts, dtype=np.uint32), expected=expected)
    fake = SimpleNamespace(split_lists=[None, lists], blocked_s=0.0)
    fake._wait = lambda event: CudaStreamedPass._wait(fake, event)
    return fake


def test_lists_are_waited_for_once_and_the_wait_counts_as_blocked():
    fake = pass_with([5, 2], (5, 2))
    CudaStreamedPass._lists_ready(fake, 0)  # a partition without a device split: nothing to wait for
    CudaStreamedPass._lists_ready(fake, 1)
    CudaStreamedPass._lists_ready(fake, 1)
    lists = fake.split_lists[1]
    assert lists.checked and lists.ready.waits == 1 and fake.blocked_s >= 0.0


def test_device_counts_other_than_prep_msms_are_refused_by_name():
    fake = pass_with([5, 3], (5, 2))
    with pytest.raises(RuntimeError, match=r"\(ones, others\) = \(5, 3\).*prep_msm counted \(5, 2\)"):
        CudaStreamedPass._lists_ready(fake, 1)
    assert not fake.split_lists[1].checked
