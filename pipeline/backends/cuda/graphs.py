"""Work queued on a stream, captured once into an executable CUDA graph and replayed with one host call.

A lone small transform's latency counts the host's time to queue its launches: from Python each launch packs its
arguments and crosses into the driver, and the GPU waits for the first of them. A graph holds the launches with their
arguments; its replay queues them all in one driver call. What a graph captured must stay valid while it is kept:
every pointer its launches took (``GraphCache`` keys carry them), and no allocation or synchronisation inside it.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Hashable

from ._bindings import driver
from .errors import check


class StreamGraph:
    """``queue()``'s work on ``stream``, captured (relaxed mode: another thread's CUDA calls meanwhile are not
    refused) and instantiated; ``launch`` replays it on a stream."""

    def __init__(self, stream, queue: Callable[[], object]) -> None:
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        check(driver.cuStreamBeginCapture(stream.handle, mode), "cuStreamBeginCapture")
        try:
            queue()
        except BaseException:
            err, graph = driver.cuStreamEndCapture(stream.handle)  # the stream leaves capture mode either way
            if int(err) == 0 and graph is not None:
                driver.cuGraphDestroy(graph)
            raise
        graph = check(driver.cuStreamEndCapture(stream.handle), "cuStreamEndCapture")
        try:
            self.handle = check(driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")
        finally:
            check(driver.cuGraphDestroy(graph), "cuGraphDestroy")  # the executable graph keeps what it needs
        check(driver.cuGraphUpload(self.handle, stream.handle), "cuGraphUpload")

    def launch(self, stream) -> None:
        check(driver.cuGraphLaunch(self.handle, stream.handle), "cuGraphLaunch")
        stream.note_launch("a captured graph")

    def close(self) -> None:
        if self.handle is not None:
            check(driver.cuGraphExecDestroy(self.handle), "cuGraphExecDestroy")
            self.handle = None


class GraphCache:
    """Graphs by key, the least recently used closed past ``capacity``. A key is captured the second time it is
    asked for: a one-off call queues its launches as they are, and pays no capture (~0.1 ms)."""

    def __init__(self, capacity: int, capture: Callable[..., StreamGraph] = StreamGraph) -> None:
        self.capacity = capacity
        self._capture = capture
        self._graphs: OrderedDict[Hashable, StreamGraph] = OrderedDict()
        self._seen: OrderedDict[Hashable, None] = OrderedDict()  # keys asked for once

    def __len__(self) -> int:
        return len(self._graphs)

    def run(self, key: Hashable, stream, queue: Callable[[], object]) -> None:
        """Queue ``queue()``'s work on ``stream``: by its graph where ``key`` has one, else as it is."""
        graph = self._graphs.get(key)
        if graph is None:
            if key not in self._seen:
                self._seen[key] = None
                if len(self._seen) > 4 * self.capacity:
                    self._seen.popitem(last=False)
                queue()
                return
            del self._seen[key]
            graph = self._graphs[key] = self._capture(stream, queue)
            while len(self._graphs) > self.capacity:
                self._graphs.popitem(last=False)[1].close()
        else:
            self._graphs.move_to_end(key)
        graph.launch(stream)

    def close(self) -> None:
        for graph in self._graphs.values():
            graph.close()
        self._graphs.clear()
        self._seen.clear()
