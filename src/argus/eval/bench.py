"""``argus bench``: library kernels against their baselines, through the gate, at one or more problem sizes.

`run_bench(name)` takes a built-in task (all its library kernels) or a library kernel (its task), and for each
size: checks the baselines compute the task (any device), then runs every kernel through the gate in a worker
process. The `BenchReport` has one `BenchRow` per kernel and size, with the numbers a table shows — time, TFLOP/s,
GB/s, % of the measured ceiling, the ratio to each baseline — and the full gate results for JSON.

Timing (GPU), ``GateOptions.timing``:

* ``"interleaved"`` (default): once a kernel has passed the gate's correctness stages, its profile stage times it
  and the baselines in the same worker process, interleaved (`argus.eval.timing.measure_interleaved`: per round
  one launch of each, L2 flushed before each, the order rotating; ``reps`` rounds). Each row's ratio is the ratio
  of the medians of that one run, with the median and quartiles of the per-round ratios beside it. The GPU's clock
  follows power and temperature; contenders timed one after the other see different clocks (on H200s the ratio to
  cuBLAS moved by 5-10 % between runs), contenders timed interleaved see the same ones. The baselines are timed
  again with every kernel: a row's baseline times are the ones its own ratio came from.
* ``"sequential"``: the baselines are timed once per size in a job of their own, before the kernels, and every
  kernel's gate compares with those times (the behaviour before interleaving).

The report says which (`BenchReport.timing`, `BenchRow.timing_method`, ``rounds``), in JSON and in markdown.

Without a GPU the gate runs correctness on the CPU interpreter at the task's small sizes and every row says
timing was skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus.eval.results import GateResult, StageResult, Status


@dataclass
class BenchRow:
    """One kernel at one size.

    `ratios` are baseline median / kernel median (above 1: the kernel is faster). `timing_method` is
    ``"interleaved"`` (kernel and baselines timed together in its gate's profile stage, `rounds` rounds; then
    `round_ratios` gives, per baseline, the ``median``, ``q1`` and ``q3`` of the per-round ratios) or
    ``"sequential"`` (baseline times from a separate job; `rounds` is the kernel's repetitions). `baseline_ms`: the
    baseline medians the ratios came from."""

    kernel: str
    task: str
    sizes: dict[str, int]
    verdict: str
    summary: str
    correct: bool
    max_abs_err: float | None = None
    max_rel_norm: float | None = None
    time_ms: float | None = None
    tflops: float | None = None
    gbps: float | None = None
    fraction_of_ceiling: float | None = None
    ratios: dict[str, float | None] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    timing_skipped: str | None = None
    timing_method: str | None = None
    rounds: int | None = None
    baseline_ms: dict[str, float | None] = field(default_factory=dict)
    round_ratios: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class BenchReport:
    """Everything a bench run produced."""

    target: str
    task: str
    gpu: bool
    rows: list[BenchRow]
    baselines: dict[str, dict[str, Any]]  # size label -> {"checks": ..., "timings": ...}
    gates: list[dict[str, Any]]
    environment: dict[str, Any]
    timing: dict[str, Any] = field(default_factory=dict)  # method, rounds, order, l2_flush (None method: no GPU)

    def to_json(self) -> dict[str, Any]:
        from argus.eval.results import jsonable

        return jsonable(
            {
                "target": self.target,
                "task": self.task,
                "gpu": self.gpu,
                "timing": self.timing,
                "rows": [r.to_json() for r in self.rows],
                "baselines": self.baselines,
                "gates": self.gates,
                "environment": self.environment,
            }
        )

    def timing_line(self) -> str:
        """One sentence saying how the numbers were measured."""
        t = self.timing
        if not self.gpu or not t.get("method"):
            return "timing: skipped (no CUDA GPU here)"
        flush = "L2 flushed before every launch" if t.get("l2_flush", True) else "L2 not flushed"
        if t["method"] == "interleaved":
            return (
                f"timing: interleaved — each kernel and its baselines in one worker process, {t.get('rounds')} rounds "
                f"of one launch each, order rotating every round, {flush}, CUDA events; ratio = baseline median / "
                "kernel median of that run, [q1, q3] of the per-round ratios"
            )
        return (
            f"timing: sequential — baselines timed once per size in a job of their own, each kernel in its gate, "
            f"{t.get('rounds')} repetitions each, {flush}, CUDA events; ratio = baseline median / kernel median"
        )

    def to_markdown(self) -> str:
        """A markdown table of the rows, headed by the target, device and timing method."""
        env = self.environment
        device = env.get("gpu", {}).get("name") if self.gpu else "CPU (no CUDA GPU)"
        names = list(dict.fromkeys(n for r in self.rows for n in r.ratios))
        lines = [
            f"### argus bench {self.target} — task {self.task} on {device}, torch {env.get('torch')}",
            "",
            self.timing_line(),
            "",
        ]
        head = ["kernel", "shape", "verdict", "ms", "TFLOP/s", "% ceiling"]
        head += [f"{n} ms" for n in names] + [f"x {n} [q1, q3]" for n in names]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            ceiling = f"{r.fraction_of_ceiling * 100:.0f}%" if r.fraction_of_ceiling is not None else "—"
            cells = [r.kernel, size_label(r.sizes), r.verdict, _num(r.time_ms, ".4f"), _num(r.tflops, ".1f"), ceiling]
            cells += [_num(r.baseline_ms.get(n), ".4f") for n in names]
            cells += [ratio_cell(r, n) for n in names]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"


def _num(value: float | None, spec: str) -> str:
    return "—" if value is None else f"{value:{spec}}"


def ratio_cell(row: BenchRow, baseline: str) -> str:
    """``"0.991x [0.982, 0.998]"``: the ratio of medians and the per-round ratio's quartiles (when interleaved)."""
    ratio = row.ratios.get(baseline)
    if ratio is None:
        return "—"
    q = row.round_ratios.get(baseline) or {}
    if q.get("q1") is not None and q.get("q3") is not None:
        return f"{ratio:.3f}x [{q['q1']:.3f}, {q['q3']:.3f}]"
    return f"{ratio:.3f}x"


def size_label(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def parse_shapes(text: str) -> list[dict[str, int]]:
    """``"M=128,N=64;M=256,N=64"`` -> two size dicts (``;`` separates shapes)."""
    from argus.kernels.registry import parse_shape

    return [parse_shape(part) for part in text.split(";") if part.strip()]


def resolve_target(name: str) -> tuple[Any, list[str]]:
    """(task, library kernel names) for a task name or a library kernel name."""
    from argus.tasks.base import TaskError
    from argus.tasks.builtin import get_task, task_of_kernel
    from argus.tasks.user import is_user_task

    try:
        task = get_task(name)
        return task, [name] if is_user_task(name) else list(task.kernels)
    except TaskError as first:
        try:
            return task_of_kernel(name), [name]
        except TaskError:
            raise first from None


def row_from_gate(gate: GateResult) -> BenchRow:
    correct = gate.stage("correct")
    profile = gate.stage("profile")
    row = BenchRow(
        kernel=gate.candidate,
        task=gate.task,
        sizes=dict(gate.sizes),
        verdict=gate.verdict,
        summary=gate.summary(),
        correct=gate.accepted,
        max_abs_err=correct.details.get("max_abs_err") if correct is not None else None,
        max_rel_norm=correct.details.get("max_rel_norm") if correct is not None else None,
        flags=[f.code for f in gate.flags],
    )
    if profile is not None and profile.status == Status.PASSED:
        d = profile.details
        row.time_ms = d["timing"]["median_ms"]
        row.tflops = d.get("throughput", {}).get("tflops")
        row.gbps = d.get("throughput", {}).get("gbps")
        row.fraction_of_ceiling = d.get("fraction_of_ceiling", {}).get("roofline")
        row.ratios = dict(d.get("speedup", {}))
        row.timing_method = d.get("timing_method", "sequential")
        row.rounds = d["timing"].get("reps")
        row.baseline_ms = {n: b["timing"]["median_ms"] for n, b in (d.get("baselines") or {}).items() if "timing" in b}
        interleaved = d.get("interleaved") or {}
        row.round_ratios = {
            n: {k: r.get(k) for k in ("median", "q1", "q3")} for n, r in (interleaved.get("ratios") or {}).items()
        }
    elif profile is not None:
        row.timing_skipped = profile.reason
    return row


# ---------------------------------------------------------------------------------------------------------------
# jobs run in worker processes


def gate_library_kernel_job(
    task: str, kernel: str, sizes: dict[str, int], options: dict[str, Any], baselines: dict[str, Any] | None
) -> dict[str, Any]:
    """Worker job: the gate for library kernel `kernel` on built-in task `task`; returns the `GateResult` JSON.
    A kernel of your own (``FILE.py:NAME``, on its own task) is traced in a sandbox, like any code argus did not
    write (`argus.eval.judge.gate_generated_kernel`)."""
    from argus.eval.candidates import library_candidate
    from argus.eval.gate import GateOptions, gate_kernel
    from argus.tasks.builtin import get_task
    from argus.tasks.user import is_user_task, kernel_of

    gate_options = GateOptions.from_dict(options)
    if is_user_task(kernel):
        from pathlib import Path

        from argus.eval.judge import gate_generated_kernel

        path, function = kernel_of(kernel)
        if gate_options.sandbox:
            result = gate_generated_kernel(get_task(task), kernel, path, function, {}, Path(path).read_text(),
                                           gate_options, sizes=sizes, baselines=baselines)  # fmt: skip
            return result.to_json()
        from argus.eval.candidates import KernelCandidate
        from argus.kernels.registry import load

        fn = load(f"{path}:{function}")
        result = gate_kernel(get_task(task), KernelCandidate(kernel, fn, {}), sizes, gate_options, baselines=baselines)
        return result.to_json()
    result = gate_kernel(get_task(task), library_candidate(kernel), sizes, gate_options, baselines=baselines)
    return result.to_json()


def baselines_job(
    task: str, sizes: dict[str, int], names: list[str], options: dict[str, Any], time: bool = True
) -> dict[str, Any]:
    """Worker job: check the baselines against the reference (any device) and, with `time`, time them (GPU; with
    interleaved timing they are timed in each kernel's gate instead)."""
    from argus.eval.baselines import check_baselines, time_baselines
    from argus.eval.gate import GateOptions
    from argus.tasks.builtin import get_task

    opts = GateOptions.from_dict(options)
    device = opts.resolved_device()
    t = get_task(task)
    out: dict[str, Any] = {"checks": check_baselines(t, sizes, names, device)}
    if device.startswith("cuda") and not time:
        out["timings"] = {n: {"interleaved": "timed with each kernel, in its gate's profile stage"} for n in names}
    elif device.startswith("cuda"):
        out["timings"] = time_baselines(
            t,
            sizes,
            names,
            device=device,
            reps=opts.reps,
            warmup=opts.warmup,
            flush_l2=opts.flush_l2,
            graph=opts.graph,
            seed=opts.seed,
        )
    else:
        out["timings"] = {n: {"skipped": "no CUDA GPU here"} for n in names}
    return out


# ---------------------------------------------------------------------------------------------------------------


def run_bench(
    name: str,
    *,
    baselines: Sequence[str] | None = None,
    shapes: Sequence[dict[str, int]] | None = None,
    options: Any = None,
    isolate: bool = True,
    timeout_s: float = 900.0,
    store_path: Any = None,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> BenchReport:
    """Bench a task or library kernel (see the module docstring). `shapes` default: the task's first benchmark
    size on a GPU, its small CPU size without one; a partial shape is completed from that default.
    `store_path`: a SQLite file (`argus.eval.store`) each gate result is written to as it arrives. How kernels and
    baselines are timed: ``options.timing`` (see the module docstring)."""
    from argus.eval.device import environment
    from argus.eval.gate import GateOptions
    from argus.eval.isolation import Job, WorkerPool, failure_status
    from argus.eval.store import ResultStore

    options = options or GateOptions()
    device = options.resolved_device()
    gpu = device.startswith("cuda")
    interleaved = options.timing == "interleaved"
    if options.timing not in ("interleaved", "sequential"):
        raise ValueError(f"timing must be 'interleaved' or 'sequential', not {options.timing!r}")
    task, kernels = resolve_target(name)
    names = list(baselines) if baselines is not None else list(task.default_baselines)
    default = task.bench_sizes[0] if gpu else task.small_sizes
    sizes_list = [{**default, **s} for s in (shapes or [default])]
    option_fields = options.to_dict()
    option_fields["baselines"] = tuple(names)
    total = len(sizes_list) * (1 + len(kernels))
    done = 0
    rows: list[BenchRow] = []
    gates: list[dict[str, Any]] = []
    base: dict[str, dict[str, Any]] = {}

    def call(job: Job, pool: WorkerPool | None) -> tuple[bool, Any, Any]:
        if pool is None:
            module, _, fn = job.target.partition(":")
            import importlib

            return True, getattr(importlib.import_module(module), fn)(**job.kwargs), None
        outcome = next(pool.run([job]))
        return outcome.ok, outcome.value, outcome

    store = ResultStore(store_path) if store_path else None
    run_id = (
        store.start_run("bench", {"target": name, "baselines": names, "shapes": sizes_list, "timing": options.timing})
        if store
        else None
    )
    pool = WorkerPool(workers=1, timeout_s=timeout_s) if isolate else None
    try:
        for sizes in sizes_list:
            label = size_label(sizes)
            if on_progress:
                on_progress(done, total, f"{'checking' if interleaved else 'checking and timing'} baselines at {label}")
            ok, value, failure = call(
                Job(
                    f"baselines:{label}",
                    "argus.eval.bench:baselines_job",
                    {
                        "task": task.name,
                        "sizes": sizes,
                        "names": names,
                        "options": option_fields,
                        "time": not interleaved,
                    },
                ),
                pool,
            )
            base[label] = value if ok else {"error": failure.reason if failure else "failed"}
            done += 1
            timings = {n: b for n, b in (base[label].get("timings") or {}).items() if "timing" in b} if ok else {}
            for kernel in kernels:
                if on_progress:
                    on_progress(done, total, f"{kernel} at {label}")
                ok, value, failure = call(
                    Job(
                        f"{kernel}:{label}",
                        "argus.eval.bench:gate_library_kernel_job",
                        {
                            "task": task.name,
                            "kernel": kernel,
                            "sizes": sizes,
                            "options": option_fields,
                            # interleaved: None, so that the gate times the baselines beside the kernel
                            "baselines": timings if gpu and not interleaved else None,
                        },
                    ),
                    pool,
                )
                if ok:
                    gate = GateResult.from_json(value)
                else:
                    gate = GateResult(kernel, task.name, sizes)
                    gate.stages.append(
                        StageResult("isolation", failure_status(failure), failure.code, failure.reason, failure.details)
                    )
                gates.append(gate.to_json())
                rows.append(row_from_gate(gate))
                if store is not None and run_id is not None:
                    store.put(run_id, f"{kernel}:{label}", gate.verdict, gate.to_json())
                done += 1
        if on_progress:
            on_progress(done, total, "done")
        if store is not None and run_id is not None:
            store.put(run_id, "baselines", "done", base)
            store.finish_run(run_id, {"rows": [r.to_json() for r in rows]})
    finally:
        if pool is not None:
            pool.close()
        if store is not None:
            store.close()
    timing = (
        {
            "method": options.timing,
            "rounds": options.reps,
            "order": "rotating" if interleaved else None,
            "l2_flush": options.flush_l2,
            "warmup": options.warmup,
        }
        if gpu
        else {"method": None, "skipped": "no CUDA GPU here"}
    )
    return BenchReport(name, task.name, gpu, rows, base, gates, environment(device), timing)


# ---------------------------------------------------------------------------------------------------------------
# the bar chart


def plot_ratios(report: BenchReport, path: Any, *, width: int = 900, bar_height: int = 22) -> bool:
    """Draw the ratio of each kernel to each baseline (baseline time / kernel time; above 1 is faster) as a
    horizontal bar chart PNG at `path`, with Pillow. Returns False (and writes nothing) when there are no
    ratios, e.g. without a GPU."""
    bars = [
        (f"{r.kernel} [{size_label(r.sizes)}] / {b}", v)
        for r in report.rows
        for b, v in r.ratios.items()
        if v is not None and v > 0
    ]
    if not bars:
        return False
    return draw_bars(
        bars, path, title=f"argus bench {report.target}: speedup over baseline (x)", width=width, bar_height=bar_height
    )


def draw_bars(bars: list[tuple[str, float]], path: Any, *, title: str, width: int = 900, bar_height: int = 22) -> bool:
    """A horizontal bar chart of (label, value) with a reference line at 1.0, written as PNG to `path`."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default()
    label_w = min(
        460, max(int(ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength(lbl, font=font)) for lbl, _ in bars) + 16
    )
    top, gap, right = 36, 8, 70
    height = top + len(bars) * (bar_height + gap) + 30
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    draw.text((10, 10), title, fill="black", font=font)
    vmax = max(1.0, max(v for _, v in bars)) * 1.05
    plot_w = width - label_w - right
    x0 = label_w

    def x(v: float) -> int:
        return x0 + int(plot_w * v / vmax)

    for i, (label, value) in enumerate(bars):
        y = top + i * (bar_height + gap)
        draw.text((8, y + bar_height // 2 - 6), label, fill="black", font=font)
        color = (46, 139, 87) if value >= 1.0 else (205, 92, 92)
        draw.rectangle([x0, y, x(value), y + bar_height], fill=color)
        draw.text((x(value) + 4, y + bar_height // 2 - 6), f"{value:.2f}x", fill="black", font=font)
    draw.line([x(1.0), top - 4, x(1.0), height - 26], fill=(60, 60, 60), width=1)
    draw.text((x(1.0) - 8, height - 22), "1.0", fill="black", font=font)
    img.save(path, format="PNG")
    return True
