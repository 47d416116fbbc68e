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

`measure_interleaved(contenders, clock, ...)` times several callables *interleaved*: each round runs one timed launch
of every contender back to back (per contender: ``before_rep``, the L2 flush, start event, call, end event, device
sync), in an order that rotates every round. The GPU's clock follows power and temperature, so contenders timed one
after the other (all repetitions of a kernel, then all of its baseline) see different clock states, and the ratio
of their medians moves by 5-10 % between runs (measured on H200s: cuBLAS differed from itself by up to 10 % between
rows of one process). Interleaved, every contender sees the same clock states; the result gives each contender's
`Timing`, the ratio of the medians to a named reference, and the median and quartiles of the per-round ratios.
`time_interleaved_cuda` is the same on CUDA events, with CUDA-graph replay per contender as `time_cuda` decides it.
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
# interleaved timing


@dataclass
class Contender:
    """One callable timed by `measure_interleaved`.

    Attributes:
        fn: the call to time (one launch, or a sequence of launches on the current stream).
        before_rep: called with the round number before each timed call (and before each warm-up call), outside
            the timed region: refresh inputs, poison outputs.
        graph_fn: what `time_interleaved_cuda` captures in a CUDA graph (default `fn`).
        timed: a contender that times itself, in another process (a sandboxed candidate): ``timed(r)`` runs round
            r's whole repetition there (fresh inputs, L2 flush, events around one call, device sync) and returns the
            milliseconds; `fn` and `before_rep` are then unused.
        wall: with `timed`, ``wall(n)``: the device-synchronized wall-clock milliseconds per call of n back-to-back
            calls, measured there (the side-stream cross-check).
    """

    fn: Callable[[], Any]
    before_rep: Callable[[int], None] | None = None
    graph_fn: Callable[[], Any] | None = None
    timed: Callable[[int], float] | None = None
    wall: Callable[[int], float] | None = None


class ContenderError(Exception):
    """A contender raised while being timed interleaved; `name` says which, `__cause__` what it raised."""

    def __init__(self, name: str, error: BaseException) -> None:
        super().__init__(f"{name}: {type(error).__name__}: {error}")
        self.name = name
        self.error = error


@dataclass
class RatioStats:
    """A contender's time over the reference's, from one interleaved run.

    Attributes:
        ratio_of_medians: contender median / reference median.
        median, q1, q3: order statistics of the per-round ratios (contender time / reference time in the same
            round: both saw the same clock state).
        samples: the per-round ratios, in round order.
    """

    ratio_of_medians: float | None
    median: float | None
    q1: float | None
    q3: float | None
    samples: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "ratio_of_medians": self.ratio_of_medians,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "samples": [round(s, 6) for s in self.samples],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RatioStats:
        return cls(
            data.get("ratio_of_medians"), data.get("median"), data.get("q1"), data.get("q3"), data.get("samples") or []
        )


def ratio_stats(numerator_ms: list[float], denominator_ms: list[float]) -> RatioStats:
    """Per-round ``numerator / denominator`` (rounds where the denominator is not positive are left out), their
    median and quartiles, and the ratio of the medians of the two series."""
    pairs = [n / d for n, d in zip(numerator_ms, denominator_ms, strict=True) if d > 0]
    den = statistics.median(denominator_ms) if denominator_ms else 0.0
    of_medians = statistics.median(numerator_ms) / den if den > 0 else None
    if not pairs:
        return RatioStats(of_medians, None, None, None, [])
    s = sorted(pairs)
    q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive") if len(s) >= 2 else (s[0], s[0], s[0])
    return RatioStats(of_medians, statistics.median(s), q1, q3, pairs)


@dataclass
class InterleavedTiming:
    """What `measure_interleaved` measured.

    Attributes:
        method: ``"interleaved"``.
        rounds: timed rounds (each: one timed call of every contender).
        order: ``"rotating"``: round r starts with contender r mod n, in the order the contenders were given.
        reference: the contender the ratios are taken against (None: no ratios).
        timings: each contender's `Timing` over the rounds (its ``method`` is the clock's: ``cuda-events`` or
            ``cuda-graph``).
        ratios: for every other contender, its time over the reference's (`RatioStats`). With the candidate as the
            reference, a baseline's ratio is the candidate's speedup over that baseline.
    """

    method: str
    rounds: int
    order: str
    reference: str | None
    timings: dict[str, Timing]
    ratios: dict[str, RatioStats]

    def to_json(self, *, samples: bool = True) -> dict[str, Any]:
        """Plain data; ``samples=False`` leaves out the per-round series (the timings keep theirs)."""
        ratios = {}
        for name, r in self.ratios.items():
            data = r.to_json()
            if not samples:
                data.pop("samples")
            ratios[name] = data
        return {
            "method": self.method,
            "rounds": self.rounds,
            "order": self.order,
            "reference": self.reference,
            "contenders": list(self.timings),
            "timings": {name: t.to_json() for name, t in self.timings.items()},
            "ratios": ratios,
        }


def measure_interleaved(
    contenders: dict[str, Contender],
    clock: Clock,
    *,
    rounds: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    reference: str | None = None,
    wall_reps: int | None = None,
    methods: dict[str, str] | None = None,
    last: str | None = None,
) -> InterleavedTiming:
    """Time `contenders` interleaved (see the module docstring): `warmup` calls of each, a wall-clock cross-check
    per contender (back-to-back calls ending in a device sync), then `rounds` rounds. In round r the order starts at
    contender ``(r + offset) % n``; each contender's timed call is preceded by its ``before_rep(r)`` and the L2 flush
    and followed by a device sync, as in `measure`. The last call of every contender is its last timed one; with
    `last` (a contender's name) the offset is chosen so that its last timed call is the last call of all (the gate
    checks the outputs of the candidate's last call after timing: nothing may run after it).

    `reference` names the contender whose time divides the others' (per round, and of the medians). `methods`
    names each contender's timing method (default ``"cuda-events"``). A contender that raises is reported as
    `ContenderError` with its name."""
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    if not contenders:
        raise ValueError("no contenders to time")
    for role, named in (("reference", reference), ("last", last)):
        if named is not None and named not in contenders:
            raise ValueError(f"{role} {named!r} is not a contender ({', '.join(contenders)})")
    names = list(contenders)
    n = len(names)
    # round r runs names[k:] + names[:k], k = (r + offset) % n, which ends with names[k - 1]
    offset = (names.index(last) + 1 - (rounds - 1)) % n if last is not None else 0

    def call(name: str) -> None:
        try:
            contenders[name].fn()
        except Exception as e:  # noqa: BLE001 - said with the contender's name
            raise ContenderError(name, e) from e

    def self_timed(name: str, r: int) -> float:
        try:
            return float(contenders[name].timed(r))  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001 - said with the contender's name
            raise ContenderError(name, e) from e

    def prepare(name: str, i: int) -> None:
        hook = contenders[name].before_rep
        if hook is not None:
            try:
                hook(i)
            except Exception as e:  # noqa: BLE001
                raise ContenderError(name, e) from e

    for i in range(warmup):
        for name in names:
            if contenders[name].timed is not None:
                self_timed(name, -1 - i)
                continue
            prepare(name, i)
            call(name)
    n_wall = wall_reps if wall_reps is not None else max(1, min(rounds, 20))
    walls: dict[str, float] = {}
    for name in names:
        wall = contenders[name].wall
        # this process's queued work (the warm-up calls above are not synchronized) finishes first: a contender timed
        # in another process shares the device with it, and its wall clock took up to 2x its event time until this
        # sync (solutions faster than eager were flagged FLAG_UNSYNCED_WORK: benchmarks/results/2026-11-29-unsynced/)
        clock.sync()
        if contenders[name].timed is not None:
            try:
                walls[name] = float(wall(n_wall)) if wall is not None else float("nan")
            except Exception as e:  # noqa: BLE001
                raise ContenderError(name, e) from e
            continue
        t0 = clock.now()
        for _ in range(n_wall):
            call(name)
        clock.sync()
        walls[name] = (clock.now() - t0) * 1e3 / n_wall
    starts = {name: [clock.event() for _ in range(rounds)] for name in names}
    ends = {name: [clock.event() for _ in range(rounds)] for name in names}
    remote: dict[str, list[float]] = {name: [0.0] * rounds for name in names if contenders[name].timed is not None}
    for r in range(rounds):
        k = (r + offset) % n
        for name in names[k:] + names[:k]:
            if name in remote:
                remote[name][r] = self_timed(name, r)
                continue
            prepare(name, r)
            if flush_l2:
                clock.flush()
            starts[name][r].record()
            call(name)
            ends[name][r].record()
            clock.sync()  # every stream: side-stream work finishes inside its own timed call
    samples = {
        name: remote[name]
        if name in remote
        else [s.elapsed_ms(e) for s, e in zip(starts[name], ends[name], strict=True)]
        for name in names
    }
    others = ", ".join(names)
    timings = {
        name: summarize(
            samples[name],
            method=(methods or {}).get(name, "cuda-events"),
            warmup=warmup,
            wall_ms=walls[name],
            l2_flush=flush_l2,
            notes=[f"timed interleaved with {others}: {rounds} rounds, order rotating every round"]
            if len(names) > 1
            else [],
        )
        for name in names
    }
    ratios = (
        {name: ratio_stats(samples[name], samples[reference]) for name in names if name != reference}
        if reference is not None
        else {}
    )
    return InterleavedTiming("interleaved", rounds, "rotating", reference, timings, ratios)


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


#: GPU clock cycles a flush keeps the stream busy after writing its buffer (about 100 us at 2 GHz): the host enqueues
#: the start event and the timed call meanwhile, so its launch overhead (tens of microseconds for a PyTorch call in a
#: worker process) is not inside the timed interval. Without it, a device that is idle after the per-repetition sync
#: reached the start event before the call was enqueued, and cuBLAS through `torch.matmul` measured 8-13 us slower
#: at 2048^3 and 4096^3 than the same call timed back to back (H100, session 5).
LAUNCH_COVER_CYCLES = 200_000


class CudaClock:
    """CUDA events on the current stream; `flush` writes a buffer of twice the L2's size (at least 64 MiB), then keeps
    the stream busy for `LAUNCH_COVER_CYCLES` so that the timed call is enqueued before the device reaches it."""

    def __init__(self, device: Any = None) -> None:
        import torch

        self.device = torch.device(device if device is not None else "cuda")
        props = torch.cuda.get_device_properties(self.device)
        l2 = int(getattr(props, "L2_cache_size", 50 * 2**20) or 50 * 2**20)
        self.flush_bytes = max(2 * l2, 64 * 2**20)
        self._buffer = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=self.device)
        self._sleep = getattr(torch.cuda, "_sleep", None)  # a device-side spin of N cycles

    def sync(self) -> None:
        import torch

        torch.cuda.synchronize(self.device)

    def event(self) -> _CudaEvent:
        return _CudaEvent()

    def flush(self) -> None:
        self._buffer.zero_()
        if self._sleep is not None:
            self._sleep(LAUNCH_COVER_CYCLES)

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
    replay = capture_graph(fn, clock)
    return measure(
        replay, clock, reps=reps, warmup=warmup, flush_l2=flush_l2, before_rep=before_rep, method="cuda-graph"
    )


def capture_graph(fn: Callable[[], Any], clock: CudaClock) -> Callable[[], Any]:
    """Capture `fn` in a CUDA graph (after three warm-up calls on a side stream, as capture requires); returns the
    graph's ``replay``. Raises whatever capture raises."""
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
    return graph.replay


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


def time_interleaved_cuda(
    contenders: dict[str, Contender],
    *,
    reference: str | None = None,
    device: Any = None,
    rounds: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    graph: bool | None = None,
    clock: CudaClock | None = None,
    last: str | None = None,
) -> InterleavedTiming:
    """`measure_interleaved` on CUDA events (`reference` and `last` as there). Each contender is timed by its own
    launches (``graph=False``), by CUDA-graph replay of its ``graph_fn`` (``graph=True``), or (``graph=None``) by
    graph replay when a short events probe of it alone gives a median under `GRAPH_THRESHOLD_MS` and capture works;
    each `Timing`'s ``method`` and ``notes`` say which. A contender whose probe raises is reported as
    `ContenderError`."""
    clock = clock or CudaClock(device)
    timed: dict[str, Contender] = {}
    methods: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    for name, c in contenders.items():
        notes[name] = []
        if c.timed is not None:  # times itself, in its own process, on CUDA events
            timed[name] = c
            methods[name] = "cuda-events"
            notes[name].append("timed in the candidate's sandbox process, by CUDA events around each call")
            continue
        use_graph = graph is True
        if graph is None:
            try:
                probe = measure(
                    c.fn,
                    clock,
                    reps=min(rounds, 10),
                    warmup=min(warmup, 3),
                    flush_l2=flush_l2,
                    before_rep=c.before_rep,
                    wall_reps=1,
                )
            except Exception as e:  # noqa: BLE001
                raise ContenderError(name, e) from e
            use_graph = probe.median_ms < GRAPH_THRESHOLD_MS
            if use_graph:
                notes[name].append(
                    f"launch overhead dominates (events median {probe.median_ms:.4g} ms): timed by CUDA-graph replay"
                )
        fn = c.fn
        methods[name] = "cuda-events"
        if use_graph:
            try:
                fn = capture_graph(c.graph_fn or c.fn, clock)
                methods[name] = "cuda-graph"
            except Exception as e:  # noqa: BLE001 - capture may legitimately fail; events stand, stated
                notes[name] = [f"CUDA-graph capture failed ({type(e).__name__}: {e}); events timing kept"]
        timed[name] = Contender(fn, c.before_rep)
    result = measure_interleaved(
        timed,
        clock,
        rounds=rounds,
        warmup=warmup,
        flush_l2=flush_l2,
        reference=reference,
        methods=methods,
        last=last,
    )
    for name, extra in notes.items():
        result.timings[name].notes.extend(extra)
    return result


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
