"""Timing: repetitions measured with device events after a warm-up, the L2 cache flushed between
repetitions, the device synchronized after each, and a synchronized wall clock alongside as a cross-check.

`measure(fn, clock, ...)` is written against a small clock interface so the same loop runs on
`CudaClock` (CUDA events; what the gate reports) and, in tests, on a CPU or simulated clock:

* ``clock.sync()`` — wait for all work on the device, every stream;
* ``clock.event()`` — an event with ``record()`` and ``elapsed_ms(later_event)``;
* ``clock.flush()`` — evict the L2 cache (CUDA: write a buffer twice the L2's size);
* ``clock.now()`` — host time in seconds.

After the warm-up, a wall clock times back-to-back calls ending in a device sync; then, per repetition:
``before_rep(i)`` (outside the timed region: refresh the inputs, poison the outputs), the L2 flush, start event,
``fn()``, end event, device sync. The last call is the last timed repetition. The device-wide sync makes work
that a candidate launches on another stream finish inside its own repetition, and the wall clock over
back-to-back calls ending in a device sync sees it even when the events do not (`argus.eval.flags` compares
the two).

`measure_graph` captures ``fn`` in a CUDA graph and times replays with the same loop, for kernels so short that
launch overhead dominates; the result says which method was used.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


class Event(Protocol):
    def record(self) -> None: ...

    def elapsed_ms(self, end: Any) -> float: ...


class Clock(Protocol):
    def sync(self) -> None: ...

    def event(self) -> Event: ...

    def flush(self) -> None: ...

    def now(self) -> float: ...


@dataclass
class Timing:
    """Statistics of one timed callable (milliseconds).

    Attributes:
        method: ``"cuda-events"`` or ``"cuda-graph"`` (or the test clock's name).
        reps, warmup: repetitions measured and calls before them.
        median_ms ... max_ms: order statistics of the repetitions; q1/q3 the quartiles.
        spread: interquartile range over the median.
        wall_ms: wall-clock time per call over back-to-back calls ending in a device synchronization (no L2
            flush): the cross-check for work outside the timed stream.
        l2_flush: whether L2 was flushed before every repetition.
        samples_ms: every repetition.
        notes: anything the reader must know (graph capture failed, ...).
    """

    method: str
    reps: int
    warmup: int
    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    q1_ms: float
    q3_ms: float
    spread: float
    wall_ms: float | None
    l2_flush: bool
    samples_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "reps": self.reps,
            "warmup": self.warmup,
            "median_ms": self.median_ms,
            "mean_ms": self.mean_ms,
            "std_ms": self.std_ms,
            "min_ms": self.min_ms,
            "max_ms": self.max_ms,
            "q1_ms": self.q1_ms,
            "q3_ms": self.q3_ms,
            "spread": self.spread,
            "wall_ms": self.wall_ms,
            "l2_flush": self.l2_flush,
            "samples_ms": [round(s, 6) for s in self.samples_ms],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Timing:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def summarize(
    samples_ms: list[float],
    *,
    method: str,
    warmup: int,
    wall_ms: float | None = None,
    l2_flush: bool = True,
    notes: list[str] | None = None,
) -> Timing:
    """`Timing` of `samples_ms` (median, mean, standard deviation, extremes, quartiles, IQR / median)."""
    if not samples_ms:
        raise ValueError("no timing samples")
    s = sorted(samples_ms)
    if len(s) >= 2:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1 = q3 = s[0]
    median = statistics.median(s)
    return Timing(
        method=method,
        reps=len(s),
        warmup=warmup,
        median_ms=median,
        mean_ms=statistics.fmean(s),
        std_ms=statistics.pstdev(s) if len(s) > 1 else 0.0,
        min_ms=s[0],
        max_ms=s[-1],
        q1_ms=q1,
        q3_ms=q3,
        spread=(q3 - q1) / median if median > 0 else 0.0,
        wall_ms=wall_ms,
        l2_flush=l2_flush,
        samples_ms=list(samples_ms),
        notes=list(notes or []),
    )


def measure(
    fn: Callable[[], Any],
    clock: Clock,
    *,
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    before_rep: Callable[[int], None] | None = None,
    wall_reps: int | None = None,
    method: str = "cuda-events",
) -> Timing:
    """Time `fn` (see the module docstring). Returns the `Timing` of `reps` repetitions."""
    if reps < 1:
        raise ValueError("reps must be at least 1")
    for i in range(warmup):
        if before_rep is not None:
            before_rep(i)
        fn()
    # the cross-check first, so that the last call of all is the last timed repetition (whose outputs the gate
    # then checks against the input draw `before_rep` gave it)
    n_wall = wall_reps if wall_reps is not None else max(1, min(reps, 20))
    clock.sync()
    t0 = clock.now()
    for _ in range(n_wall):
        fn()
    clock.sync()
    wall = (clock.now() - t0) * 1e3 / n_wall
    starts = [clock.event() for _ in range(reps)]
    ends = [clock.event() for _ in range(reps)]
    for i in range(reps):
        if before_rep is not None:
            before_rep(i)
        if flush_l2:
            clock.flush()
        starts[i].record()
        fn()
        ends[i].record()
        clock.sync()  # every stream: side-stream work finishes inside its repetition
    samples = [s.elapsed_ms(e) for s, e in zip(starts, ends, strict=True)]
    return summarize(samples, method=method, warmup=warmup, wall_ms=wall, l2_flush=flush_l2)


# --------------------------------------------------------------------------------------------------------------
# clocks


class _HostEvent:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self) -> None:
        import time

        self.t = time.perf_counter()

    def elapsed_ms(self, end: _HostEvent) -> float:
        return (end.t - self.t) * 1e3


class CpuClock:
    """Host timestamps as events. For testing the harness's logic on a machine without a GPU; the gate never
    reports CPU timings."""

    def sync(self) -> None:
        pass

    def event(self) -> _HostEvent:
        return _HostEvent()

    def flush(self) -> None:
        pass

    def now(self) -> float:
        import time

        return time.perf_counter()


class _CudaEvent:
    def __init__(self) -> None:
        import torch

        self.e = torch.cuda.Event(enable_timing=True)

    def record(self) -> None:
        self.e.record()

    def elapsed_ms(self, end: _CudaEvent) -> float:
        return float(self.e.elapsed_time(end.e))


class CudaClock:
    """CUDA events on the current stream; `flush` writes a buffer of twice the L2's size (at least 64 MiB)."""

    def __init__(self, device: Any = None) -> None:
        import torch

        self.device = torch.device(device if device is not None else "cuda")
        props = torch.cuda.get_device_properties(self.device)
        l2 = int(getattr(props, "L2_cache_size", 50 * 2**20) or 50 * 2**20)
        self.flush_bytes = max(2 * l2, 64 * 2**20)
        self._buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)

    def sync(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def event(self) -> _CudaEvent:
        return _CudaEvent()

    def flush(self) -> None:
        self._buffer.zero_()

    def now(self) -> float:
        import time

        return time.perf_counter()


def measure_graph(
    fn: Callable[[], Any],
    clock: CudaClock,
    *,
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    before_rep: Callable[[int], None] | None = None,
) -> Timing:
    """Capture `fn` in a CUDA graph (after warm-up on a side stream, as capture requires) and time its replays.
    Raises whatever capture raises (e.g. work on a stream the capture does not own)."""
    import torch

    stream = torch.cuda.Stream(device=clock.device)
    stream.wait_stream(torch.cuda.current_stream(clock.device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(clock.device).wait_stream(stream)
    clock.sync()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    clock.sync()
    return measure(
        graph.replay, clock, reps=reps, warmup=warmup, flush_l2=flush_l2, before_rep=before_rep, method="cuda-graph"
    )


#: Below this median (ms) launch overhead dominates and `time_cuda` (auto mode) re-measures with a CUDA graph.
GRAPH_THRESHOLD_MS = 0.02


def time_cuda(
    fn: Callable[[], Any],
    *,
    device: Any = None,
    reps: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    graph: bool | None = None,
    before_rep: Callable[[int], None] | None = None,
    clock: CudaClock | None = None,
    graph_fn: Callable[[], Any] | None = None,
) -> Timing:
    """Time `fn` on the GPU: CUDA events (``graph=False``), CUDA-graph replay (``graph=True``), or events first
    and graph replay when the median is under `GRAPH_THRESHOLD_MS` and capture works (``graph=None``). The
    result's ``method`` and ``notes`` say which. `graph_fn` (default `fn`) is what is captured: a call that
    launches on the current stream (a launch prepared for a fixed stream cannot be captured)."""
    clock = clock or CudaClock(device)
    captured = graph_fn or fn
    if graph is True:
        return measure_graph(captured, clock, reps=reps, warmup=warmup, flush_l2=flush_l2, before_rep=before_rep)
    timing = measure(fn, clock, reps=reps, warmup=warmup, flush_l2=flush_l2, before_rep=before_rep)
    if graph is None and timing.median_ms < GRAPH_THRESHOLD_MS:
        try:
            replay = measure_graph(captured, clock, reps=reps, warmup=warmup, flush_l2=flush_l2, before_rep=before_rep)
        except Exception as e:  # noqa: BLE001 - capture may legitimately fail; events stand, stated
            timing.notes.append(f"CUDA-graph capture failed ({type(e).__name__}: {e}); events timing kept")
        else:
            replay.notes.append(
                f"launch overhead dominates (events median {timing.median_ms:.4g} ms): timed by CUDA-graph replay"
            )
            return replay
    return timing


def throughput(time_ms: float, flops: float | None, moved_bytes: float | None) -> dict[str, float | None]:
    """TFLOP/s and GB/s at `time_ms` from the declared counts (None where a count is not declared)."""
    if time_ms <= 0:
        return {"tflops": None, "gbps": None}
    seconds = time_ms * 1e-3
    return {
        "tflops": flops / seconds / 1e12 if flops else None,
        "gbps": moved_bytes / seconds / 1e9 if moved_bytes else None,
    }


def fraction_of_ceilings(figures: dict[str, float | None], ceilings: dict[str, Any] | None) -> dict[str, float | None]:
    """Achieved TFLOP/s and GB/s as fractions of the measured ceilings, and the larger of the two (the
    roofline fraction: how close the kernel is to whichever resource bounds it)."""
    out: dict[str, float | None] = {"compute": None, "memory": None, "roofline": None}
    if not ceilings:
        return out
    if figures.get("tflops") and ceilings.get("bf16_gemm_tflops"):
        out["compute"] = figures["tflops"] / ceilings["bf16_gemm_tflops"]
    if figures.get("gbps") and ceilings.get("copy_gbps"):
        out["memory"] = figures["gbps"] / ceilings["copy_gbps"]
    present = [v for v in (out["compute"], out["memory"]) if v is not None]
    out["roofline"] = max(present) if present else None
    return out
