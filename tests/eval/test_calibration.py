"""The cost model's calibration (`argus.eval.calibration`): the metrics, the fit, held-out honesty, the rows'
provenance and the shipped calibration's freshness."""

from __future__ import annotations

import importlib.util
import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest

from argus.eval import calibration as C

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "benchmarks" / "calibration" / "recorded.jsonl"
HELDOUT = ROOT / "benchmarks" / "calibration" / "heldout.jsonl"  # benchmarks/calibration_gpu.py's run, featurized
HELDOUT_RUN = ROOT / "benchmarks" / "results" / "2026-12-02-costmodel-calibration" / "heldout.jsonl"


def _features(**over: float) -> dict[str, float]:
    f = {name: 0.0 for name in C.FEATURES + C.PROBLEM_FEATURES}
    f.update(over)
    return f


def _row(group: str, label: str, ms: float, est: float, **features: float) -> C.Row:
    return C.Row(
        family="gemm", group=group, label=label, ms=ms, gpu="H200", source="test", plan={},
        features=_features(**features), estimate_ms=est, kernels=["k"],
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# metrics


def test_spearman():
    assert C.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert C.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert C.spearman([1, 2, 3], [1, 1, 1]) is None  # a constant side
    assert C.spearman([1, 2], [1, 2]) is None  # too few
    # ties take their mean rank: ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4)
    assert C.spearman([5, 5, 7, 9], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)


def test_metrics_regret_hits_and_trust_k():
    rows = [
        _row("a", "x", 1.0, 1.0), _row("a", "y", 2.0, 2.0), _row("a", "z", 3.0, 3.0),  # the model is right
        _row("b", "x", 3.0, 1.0), _row("b", "y", 2.0, 2.0), _row("b", "z", 1.0, 3.0),  # the model is reversed
    ]  # fmt: skip
    m = C.metrics(rows, [r.estimate_ms for r in rows])
    assert m.groups == 2 and m.rows == 6
    assert m.hits == 0.5
    assert m.regret == pytest.approx(math.sqrt(3.0))  # geometric mean of 1 and 3
    assert m.trust_k == 3  # group b needs all three measured
    assert m.top_spearman == pytest.approx(0.0)  # mean of +1 and -1
    with pytest.raises(C.CalibrationError):
        C.metrics(rows, [1.0])


# ---------------------------------------------------------------------------------------------------------------
# the fit


def _synthetic(seed: int = 0, groups: int = 12) -> list[C.Row]:
    """Rows whose measured/estimate ratio follows a known law: within a problem, 0.4 * stages - 0.3 * wave
    efficiency; between problems, 0.2 * log_flops."""
    rng = random.Random(seed)
    rows = []
    for g in range(groups):
        flops = rng.uniform(20, 30)
        for c in range(8):
            stages, eff = rng.randint(2, 6), rng.uniform(0.3, 1.0)
            est = rng.uniform(0.5, 2.0)
            ms = est * math.exp(0.4 * stages - 0.3 * eff + 0.2 * flops - 5.0)
            rows.append(_row(f"g{g}", f"c{c}", ms, est, stages=stages, wave_efficiency=eff, log_flops=flops))
    return rows


def test_fit_recovers_a_known_correction_held_out():
    rows = _synthetic()
    model = C.fit_family(rows, ridge=1e-6)
    i, j = C.FEATURES.index("stages"), C.FEATURES.index("wave_efficiency")
    assert model.within[i] / model.scale[i] == pytest.approx(0.4, rel=1e-3)
    assert model.within[j] / model.scale[j] == pytest.approx(-0.3, rel=1e-3)
    report = C.evaluate(rows, ridge=1e-6)["gemm"]
    assert report["calibrated"].median_error < 1.001
    assert report["calibrated"].top_spearman == pytest.approx(1.0)
    assert report["calibrated"].trust_k == 1
    assert report["uncalibrated"].median_error > 1.2


def test_held_out_predictions_do_not_see_their_group():
    rows = _synthetic(groups=6)
    odd = [replace(r, ms=r.ms * 50.0) for r in rows if r.group == "g0"]  # a group no other group resembles
    rows = odd + [r for r in rows if r.group != "g0"]
    held = C.held_out_predictions(rows, ridge=1e-6)
    inside = C.fit_family(rows, ridge=1e-6)
    for r, p in zip(rows[: len(odd)], held, strict=False):
        assert p < r.ms / 10  # predicted from the other groups' law, not from its own 50x
        assert inside.predict(r.estimate_ms, r.features) > p  # a fit that saw the group moves toward it
    with pytest.raises(C.CalibrationError, match="two groups"):
        C.held_out_predictions([r for r in rows if r.group == "g1"])


def test_calibration_round_trip_and_trust(tmp_path):
    rows = _synthetic()
    cal = C.calibrate(rows, "H200", ridge=1e-6)
    path = tmp_path / "cal.json"
    cal.save(path)
    back = C.Calibration.load(path)
    r = rows[0]
    assert back.calibrated_ms("gemm", r.estimate_ms, r.features, ["k"]) == pytest.approx(
        cal.families["gemm"].predict(r.estimate_ms, r.features)
    )
    assert back.trust_k("gemm") == 1
    assert back.calibrated_ms("gemm", r.estimate_ms, r.features, ["another_kernel"]) is None  # not extrapolated
    assert back.calibrated_ms("attention", 1.0, r.features) is None
    data = json.loads(path.read_text())
    data["features"] = data["features"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(C.CalibrationError, match="other features"):
        C.Calibration.load(path)
    with pytest.raises(C.CalibrationError, match="no calibration"):
        C.Calibration.load(tmp_path / "missing.json")
    with pytest.raises(C.CalibrationError, match="no rows measured on H100"):
        C.calibrate(rows, "H100-SXM")


def test_a_correction_that_does_not_help_is_not_used():
    rows = _synthetic()
    cal = C.calibrate(rows, "H200", ridge=1e-6)
    cal.heldout["gemm"]["calibrated"]["median_error"] = 9.0  # as if it had lost to the raw model held out
    assert not cal.improves("gemm")
    assert cal.calibrated_ms("gemm", 1.0, rows[0].features, ["k"]) is None
    assert cal.trust_k("gemm") == cal.heldout["gemm"]["uncalibrated"]["trust_k"]


# ---------------------------------------------------------------------------------------------------------------
# rows


def test_row_validation(tmp_path):
    good = {"family": "gemm", "group": "g", "label": "l", "ms": 1.0, "gpu": "H200", "source": "s", "plan": {}}
    C.Row.from_json(good)
    for bad, match in (
        ({**good, "family": "fft"}, "unknown family"),
        ({**good, "ms": 0.0}, "ms must be > 0"),
        ({**good, "ms": float("nan")}, "ms must be > 0"),
        ({**good, "colour": "red"}, "unknown row fields"),
        ({k: v for k, v in good.items() if k != "plan"}, "needs"),
    ):
        with pytest.raises(C.CalibrationError, match=match):
            C.Row.from_json(bad)
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(good) + "\n\n# a comment\n" + json.dumps({**good, "ms": -1}) + "\n")
    with pytest.raises(C.CalibrationError, match="rows.jsonl:4"):
        C.read_rows([path])
    with pytest.raises(C.CalibrationError, match="without features"):
        C.evaluate([C.Row.from_json(good), C.Row.from_json({**good, "group": "h"})])
    with pytest.raises(C.CalibrationError, match="cannot be rebuilt"):
        C.launches(C.Row.from_json({**good, "family": "other"}))
    with pytest.raises(C.CalibrationError, match="CALIBRATION_PLAN|row 'l'"):
        C.launches(C.Row.from_json({**good, "plan": {"problem": {"M": 1}}}))


def test_gemm_and_attention_plans_are_estimated_launch_by_launch():
    from argus.eval import costmodel
    from argus.kernels import matmul as mm

    problem = {"M": 1024, "N": 1024, "K": 16384, "dtype": "bf16", "out": "bf16", "a_major": "K", "b_major": "K"}
    config = {"BM": 128, "BN": 128, "CONSUMERS": 2, "STAGES": 4, "SPLITS": 4}
    row = C.Row(family="gemm", group="g", label="split", ms=1.0, gpu="H200", source="t",
                plan={"problem": problem, "config": config})  # fmt: skip
    found = C.launches(row)
    assert [k.name for k, _ in found] == ["gemm_warp_specialized_persistent", "gemm_split_reduce"]
    est, f = C.featurize(row)
    parts = [costmodel.estimate(k, {v.name: s[v.name] for v in k.shape_vars}, gpu="H200").ms for k, s in found]
    assert est == pytest.approx(sum(parts))
    assert f["launches"] == 2.0
    assert mm.GemmConfig(**config).SPLITS == 4
    attention = C.Row(
        family="attention", group="a", label="c", ms=1.0, gpu="H200", source="t",
        plan={"problem": {"batch": 1, "heads": 32, "kv_heads": 8, "sq": 1, "sk": 8192, "d": 128, "dv": 128},
              "config": {"BM": 64, "BN": 128, "STAGES": 2, "CONSUMERS": 1, "SPLITS": 8, "PACK": True,
                         "P_REGISTERS": True}},
    )  # fmt: skip
    (done,) = C.with_features([attention])
    assert done.kernels == ["attention_combine", "flash_attention"]
    assert done.estimate_ms > 0 and done.features["launches"] == 2.0


def _conv_row(config: dict, layout: str | None = None, **problem: object) -> C.Row:
    """A conv row of a small 2-d convolution (2 images of 64 channels, 10 x 12, 64 filters of 3 x 3, padding 1)."""
    conv = {"rank": 2, "batch": 2, "channels": 64, "filters": 64, "groups": 1, "size": [1, 10, 12],
            "kernel": [1, 3, 3], "stride": [1, 1, 1], "padding": [0, 1, 1], "dilation": [1, 1, 1], "bias": False,
            "dtype": "bf16", **problem}  # fmt: skip
    plan = {"problem": conv, "config": config, **({"layout": layout} if layout else {})}
    return C.Row(family="conv", group="c", label="l", ms=1.0, gpu="H200", source="t", plan=plan)


def _bound(row: C.Row) -> list[tuple[str, dict[str, int], dict]]:
    """(kernel name, sizes, trace parameters) of each launch of `row`, every shape symbol bound."""
    found = []
    for kernel, sizes in C.launches(row):
        assert {v.name for v in kernel.shape_vars} <= set(sizes), (kernel.name, sizes)
        found.append((kernel.name, sizes, dict(kernel.params)))
    return found


def test_conv_plans_are_rebuilt_as_the_gpu_call_launches_them():
    """`launches` of a conv row: the kernels `run_implicit_on_gpu` launches for its tile, each with the sizes of the
    tensors it is given (channels last or NCHW, split-K's workspace and reduction, f32's input planes)."""
    tile = {"BH": 2, "BW": 64, "BN": 64, "STAGES": 4, "CONSUMERS": 2}
    ((name, sizes, params),) = _bound(_conv_row(tile))
    assert name == "conv_implicit_gemm" and not params["NCHW"]
    assert sizes == {"NX": 2, "H": 10, "WQ": 12, "CQ": 64, "TX": 1, "F": 64, "TAPS": 9, "C": 64, "N": 2, "OH": 10,
                     "OW": 12}  # fmt: skip
    ((_, nchw, params),) = _bound(_conv_row(tile, "nchw"))  # a row of 128 bytes: the kernel writes NCHW itself
    assert params["NCHW"] and nchw == sizes
    ((_, _, params),) = _bound(_conv_row({**tile, "BH": 8, "BW": 16}, "nchw"))  # 32 bytes: channels last, copied
    assert not params["NCHW"]
    ((_, strided, _),) = _bound(_conv_row({**tile, "BH": 8, "BW": 16}, stride=[1, 2, 2]))
    assert (strided["WQ"], strided["OH"], strided["OW"]) == (6, 5, 6)  # the input's view (N, H, W / 2, 2, C)
    ((_, persistent, params),) = _bound(_conv_row({**tile, "BLOCKS": 132}))
    assert params["BLOCKS"] == 132 and persistent == sizes
    split = _bound(_conv_row({**tile, "BH": 8, "BW": 16, "SPLITS": 3}))
    assert [(n, s) for n, s, _ in split][1:] == [("conv_split_reduce", {"S": 3, "M": 240, "N": 64})]
    assert split[0][2]["OUT"] == "f32" and split[0][1]["OH"] == 10
    flat = _bound(_conv_row({"BH": 1, "BW": 128, "BN": 64, "STAGES": 6, "CONSUMERS": 2, "FLAT": True, "SPLITS": 3}))
    assert [n for n, _, _ in flat] == ["conv_im2col_gemm", "conv_split_reduce"]
    assert flat[0][1] == {"N": 2, "H": 10, "W": 12, "C": 64, "TX": 1, "F": 64, "TAPS": 9, "M": 240}
    assert flat[1][1] == {"S": 3, "M": 240, "N": 64}
    f32 = _bound(_conv_row({**tile, "BK": 32, "BN": 32}, channels=20, filters=32, bias=True, dtype="f32"))
    assert [n for n, _, _ in f32] == ["split_bf16x3", "conv_implicit_gemm"]  # the weight's planes: staged once
    assert f32[0][1] == {"L": 2, "R": 120, "C": 20, "P": 120, "D": 24}
    assert (f32[1][1]["NX"], f32[1][1]["TX"], f32[1][1]["CQ"], f32[1][2]["TERMS"]) == (6, 3, 24, 3)


def test_conv_rows_are_estimated_and_refused_where_not_rebuilt():
    from argus.eval import costmodel

    row = _conv_row({"BH": 8, "BW": 16, "BN": 64, "STAGES": 4, "CONSUMERS": 2, "SPLITS": 3})
    (done,) = C.with_features([row])
    assert done.kernels == ["conv_implicit_gemm", "conv_split_reduce"] and done.features["launches"] == 2.0
    assert all(math.isfinite(v) for v in done.features.values())
    parts = [costmodel.estimate(k, s, gpu="H200").ms for k, s in C.launches(row)]
    assert done.estimate_ms == pytest.approx(sum(parts))
    for problem, config, match in (
        ({"groups": 64, "filters": 64}, {}, "64 groups"),  # depthwise: not the implicit kernel's
        ({"transposed": True}, {}, "a transposed convolution"),
        ({"dtype": "f32"}, {"FLAT": True, "BH": 1, "BW": 128}, "flattened-position kernel does not take"),
        ({}, {"SPLITS": 5}, "does not divide"),
    ):
        with pytest.raises(C.CalibrationError, match=match):
            C.launches(_conv_row({"BH": 8, "BW": 16, "BN": 64, "STAGES": 4, "CONSUMERS": 2, **config}, **problem))
    with pytest.raises(C.CalibrationError, match="layout 'nhwc'"):
        C.launches(_conv_row({"BH": 8, "BW": 16, "BN": 64, "STAGES": 4, "CONSUMERS": 2}, "nhwc"))


#: a decode configuration of the grouped kernels (64-row tiles on one consumer warpgroup)
_DECODE = {"BM": 64, "BN": 64, "BK": 64, "STAGES": 8, "CONSUMERS": 1, "GROUP": 8}


def _moe_row(config: dict, routing: list[int] | None = None, **problem: object) -> C.Row:
    """A moe row of a small grouped product: 8 experts, 100 routed rows of which 3 experts have 30, 20 and 50, K
    256, N 192 (SwiGLU: a weight of 384 columns, the gate's then the up's)."""
    grouped = {"experts": 8, "rows": 100, "k": 256, "n": 192, "dtype": "bf16", "epilogue": "plain", **problem}
    routing = [30, 0, 20, 0, 50, 0, 0, 0] if routing is None else routing
    plan = {"problem": grouped, "config": config, "routing": routing}
    return C.Row(family="moe", group="m", label="l", ms=1.0, gpu="H200", source="t", plan=plan)


def test_moe_plans_are_rebuilt_as_the_gpu_call_launches_them():
    """`launches` of a moe row: the kernel `moe.prepare` launches (`grouped_gemm_persistent`, or
    `grouped_gemm_swiglu` for the gated up-projection) with its trace parameters, at the sizes of the call's
    tensors with E the experts the routing gives rows (the others' weights are never read, their units none)."""
    from argus.kernels import moe

    ((name, sizes, params),) = _bound(_moe_row(_DECODE))
    assert name == "grouped_gemm_persistent"
    assert sizes == {"R": 100, "K": 256, "E": 3, "N": 192}  # 3 of the 8 experts have rows
    assert (params["SEARCH"], params["IN"], params["OUT"], params["EPILOGUE"]) == (3, "bf16", "bf16", "direct")
    chosen = moe.choose(100, 192, 256, 8)  # what grouped_mm takes without a configuration: a decode tile here
    ((_, _, planned),) = _bound(_moe_row(chosen))
    assert planned == dict(moe.grouped_gemm_persistent.trace(**moe.launch_params(chosen, 8, "bf16")).params)
    assert planned["BM"] == 64 and planned["CONSUMERS"] == 1
    ((_, every, _),) = _bound(_moe_row(_DECODE, [10, 10, 10, 10, 20, 10, 10, 10]))
    assert every == {"R": 100, "K": 256, "E": 8, "N": 192}  # every expert routed: the call's own tensors
    ((name, sizes, params),) = _bound(_moe_row(_DECODE, epilogue="swiglu", dtype="f16", activation="gelu"))
    assert name == "grouped_gemm_swiglu" and sizes == {"R": 100, "K": 256, "E": 3, "N2": 384, "N": 192}
    assert (params["ACT"], params["IN"], params["OUT"]) == ("gelu", "f16", "f16")
    ((_, sizes, params),) = _bound(_moe_row({**_DECODE, "SEARCH": 5}, [0] * 15 + [7], experts=16))
    assert (sizes["E"], params["SEARCH"]) == (1, 5)  # SEARCH as given (by default the call's 16 experts': 4)


def test_moe_rows_are_estimated_and_refused_where_not_rebuilt():
    from argus.eval import costmodel

    row = _moe_row({**_DECODE, "EPILOGUE": "tma"}, epilogue="swiglu")
    (done,) = C.with_features([row])
    assert done.kernels == ["grouped_gemm_swiglu"] and done.features["launches"] == 1.0
    assert all(math.isfinite(v) for v in done.features.values())
    ((kernel, sizes),) = C.launches(row)
    assert done.estimate_ms == pytest.approx(costmodel.estimate(kernel, sizes, gpu="H200").ms)
    wide = {"k": 4096, "n": 4096}
    few = C.featurize(_moe_row(_DECODE, **wide))[0]
    every = C.featurize(_moe_row(_DECODE, [10, 10, 10, 10, 20, 10, 10, 10], **wide))[0]
    assert few < every  # three experts' weights read, not eight
    good = _moe_row(_DECODE).plan
    for plan, match in (
        ({**good, "problem": {**good["problem"], "epilogue": "scaled"}}, "epilogue 'scaled'"),  # FP8: not measured
        ({**good, "problem": {**good["problem"], "dtype": "f32"}}, "dtype 'f32'"),
        ({**good, "problem": {**good["problem"], "k": 260}}, "multiples of 8"),
        ({**good, "routing": [50, 50]}, "each of the 8 experts"),
        ({**good, "routing": [60, 0, 20, 0, 50, 0, 0, 0]}, "100 rows at most"),
        ({**good, "routing": [0] * 8}, "no expert a row"),
        ({k: v for k, v in good.items() if k != "routing"}, "needs its routing"),
        ({**good, "config": {**_DECODE, "SEARCH": 2}}, "finds at most 4 experts, not 8"),
        ({**good, "config": {**_DECODE, "CONSUMERS": 3}}, "CONSUMERS is 1 or 2"),
    ):
        with pytest.raises(C.CalibrationError, match=match):
            C.launches(replace(_moe_row(_DECODE), plan=plan))


def test_shape_sizes_refuse_shapes_a_call_would_not_pass():
    from argus.kernels.conv_implicit import conv_split_reduce

    kernel = conv_split_reduce.trace(SPLITS=2)
    assert C._shape_sizes(kernel, {"W": (2, 240, 64), "Y": (240, 64)}) == {"S": 2, "M": 240, "N": 64}
    with pytest.raises(ValueError, match="M is 240 by one tensor and 120 by Y"):
        C._shape_sizes(kernel, {"W": (2, 240, 64), "Y": (120, 64)})
    with pytest.raises(ValueError, match="3 dimensions"):
        C._shape_sizes(kernel, {"W": (480, 64)})


# ---------------------------------------------------------------------------------------------------------------
# the recorded rows and the shipped calibration


def _extraction():
    spec = importlib.util.spec_from_file_location("calibration_rows", ROOT / "benchmarks" / "calibration_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recorded_rows_are_what_the_results_files_say():
    """Every recorded row is re-extracted from the benchmark result it cites: same number, same plan (a row edited
    by hand, or a results file changed after the extraction, fails here)."""
    rows = C.read_rows([RECORDED])
    fresh = {(r["group"], r["label"]): r for r in _extraction().recorded()}
    assert len(rows) >= 500
    missing = [(r.group, r.label) for r in rows if (r.group, r.label) not in fresh]
    assert not missing, missing[:5]
    for r in rows:
        f = fresh[(r.group, r.label)]
        assert (r.ms, r.plan, r.source, r.gpu) == (f["ms"], f["plan"], f["source"], f["gpu"])
        assert r.features is not None and r.estimate_ms is not None and r.kernels


def test_heldout_rows_are_the_gpu_run():
    """The featurized held-out rows are the GPU run's rows (benchmarks/calibration_gpu.py), number for number."""
    rows = C.read_rows([HELDOUT])
    run = {(r.group, r.label): r for r in C.read_rows([HELDOUT_RUN])}
    assert len(rows) == len(run) >= 200
    for r in rows:
        raw = run[(r.group, r.label)]
        assert (r.ms, r.plan, r.source, r.gpu, r.family) == (raw.ms, raw.plan, raw.source, raw.gpu, raw.family)
        assert raw.features is None and r.features is not None  # computed here, not on the GPU machine
    recorded = {(r.group, r.label) for r in C.read_rows([RECORDED])}
    assert not {g for g, _ in run} & {g for g, _ in recorded}  # problems no recorded row has


def test_label_parsers():
    x = _extraction()
    assert x.gemm_config("128x256x64 s4 c2 split2 tail3 tma swap") == {
        "BM": 128, "BN": 256, "BK": 64, "STAGES": 4, "CONSUMERS": 2, "SPLITS": 2, "TAIL": 3, "EPILOGUE": "tma",
        "SWAP": True,
    }  # fmt: skip
    assert x.gemm_config("rows 64 s4 t128") is None  # a GEMV plan
    assert x.attention_config("192x128 s2 c3 regP pingpong overlap") == {
        "BM": 192, "BN": 128, "STAGES": 2, "CONSUMERS": 3, "P_REGISTERS": True, "PINGPONG": True, "OVERLAP": True,
    }  # fmt: skip
    assert x.attention_config("64x128 s2 c1 split8 packed regP")["SPLITS"] == 8
    assert x.attention_config("128x128 s2 c2 magic") is None
    assert x.conv_config("flat 128x256 s4 c2 split3") == {
        "BH": 1, "BW": 128, "BN": 256, "STAGES": 4, "CONSUMERS": 2, "BLOCKS": 0, "BK": 64, "SPLITS": 3, "FLAT": True,
    }  # fmt: skip
    for label in ("cudnn", "8x16 s4 c2", "8x16x128 s4 c2 split2 p132", "flat 8x16x128 s4 c2"):
        assert x.conv_config(label) is None, label
    assert x.moe_config("64x128x64 s8 c1 g8 direct") == {
        "BM": 64, "BN": 128, "BK": 64, "STAGES": 8, "CONSUMERS": 1, "GROUP": 8, "EPILOGUE": "direct",
    }  # fmt: skip
    assert x.moe_label({"BM": 128, "BN": 256, "BK": 64, "STAGES": 4}) == "128x256x64 s4 c2 g8 direct"  # defaults
    for label in ("torch (row-major B)", "argus 128x256x64/4 g8 direct", "64x128x64 s8 c1 g8 swizzled"):
        assert x.moe_config(label) is None, label
    assert x._decode_config("64x128 s8") == x.moe_config("64x128x64 s8 c1 g8 direct")
    assert x._decode_config("64x256x64:4:tma") == x.moe_config("64x256x64 s4 c1 g8 tma")
    assert x._decode_config("chosen") is None


def test_moe_rows_carry_the_routing_their_benchmark_drew():
    """The MoE rows' routing is the one their benchmark timed (drawn again by the extraction, which checks it
    against what the result recorded), every row's configuration is its label's and stored directly (the TMA-store
    configurations measured are stale), and a decode problem gathers its configurations from several calls."""
    x = _extraction()
    moe = [r for r in C.read_rows([RECORDED]) if r.family == "moe"]
    assert len(moe) >= 100 and {r.plan["problem"]["epilogue"] for r in moe} == {"plain", "swiglu"}
    for r in moe:
        p = r.plan["problem"]
        assert len(r.plan["routing"]) == p["experts"] and sum(r.plan["routing"]) == p["rows"], r.group
        assert r.plan["config"] == x.moe_config(r.label) and r.plan["config"]["EPILOGUE"] == "direct"
    assert sum(1 for c in x.decode_routing(256, 8, 16) if c) == 98  # DeepSeek-V3 at 16 tokens: 98 experts touched
    assert x.decode_routing(8, 2, 1) == x.decode_routing(8, 2, 1) and sum(x.decode_routing(8, 2, 1)) == 2
    assert max(x._sweep_routing("one-hot", 8, 8192)) == 5840  # sweep3.json's sizes_max for Mixtral, one expert hot
    mixtral = {r.label for r in moe if r.group == "moe plain E=8 R=32 K=14336 N=4096 bf16 Mixtral down T=16"}
    assert mixtral == {
        "64x256x64 s4 c1 g8 direct", "64x256x64 s5 c1 g8 direct", "64x128x64 s8 c1 g8 direct",
        "128x256x64 s4 c2 g8 direct", "64x64x64 s8 c1 g8 direct",
    }  # fmt: skip


def test_the_conv_label_parser_inverts_implicit_config_label():
    """`conv_config(config.label()) == config` for every tile the planner may take (the flattened tile's positions
    are one row, BH = 1), and the label of what it parses is the label it was given."""
    import itertools

    from argus.kernels.conv import ImplicitConfig

    x = _extraction()
    tiles = [(8, 16), (2, 64), (4, 32), (8, 8), (4, 16), (1, 128)]
    for (bh, bw), bn, stages, consumers, blocks, bk, splits, flat in itertools.product(
        tiles, (16, 64, 128, 256), (2, 4, 6), (1, 2), (0, 132, 264), (16, 32, 64), (1, 2, 8), (False, True)
    ):
        if flat and bh != 1:
            continue
        config = ImplicitConfig(bh, bw, bn, stages, consumers, blocks, bk, splits, flat)
        parsed = x.conv_config(config.label())
        assert parsed is not None and ImplicitConfig(**parsed) == config, config
        assert ImplicitConfig(**parsed).label() == config.label()


def test_recorded_features_are_the_current_cost_model():
    """A sample of the recorded rows' features, computed again: a change to the cost model or the kernels that
    moves them fails here until the rows are featurized again (benchmarks/calibration_rows.py --featurize) and the
    calibration refitted."""
    rows = C.read_rows([RECORDED, HELDOUT])
    sample = [rows[i] for i in range(0, len(rows), max(1, len(rows) // 6))][:6]
    sample += [r for r in rows if r.family == "attention"][:2]
    sample += [r for r in rows if r.family == "conv"][::40]  # implicit, flattened and split tiles
    sample += [r for r in rows if r.family == "moe"][::30]  # plain and SwiGLU, prefill and decode
    for r in sample:
        fresh = C.with_features([replace(r, features=None, estimate_ms=None, kernels=[])])[0]
        assert fresh.estimate_ms == pytest.approx(r.estimate_ms, rel=1e-9), (r.group, r.label)
        for name in C.FEATURES + C.PROBLEM_FEATURES:
            assert fresh.features[name] == pytest.approx(r.features[name], rel=1e-9, abs=1e-12), (r.label, name)


def test_shipped_calibration_is_the_fit_of_the_recorded_rows():
    shipped = C.Calibration.load()
    refit = C.calibrate(C.read_rows([RECORDED, HELDOUT]), shipped.gpu)
    assert set(shipped.families) == set(refit.families)
    for family, model in refit.families.items():
        assert shipped.families[family].within == pytest.approx(model.within, rel=1e-6, abs=1e-9)
        assert shipped.families[family].between == pytest.approx(model.between, rel=1e-6, abs=1e-9)
        assert shipped.families[family].intercept == pytest.approx(model.intercept, rel=1e-6, abs=1e-9)
        for model_name, metrics in refit.heldout[family].items():
            for key, value in metrics.items():
                assert shipped.heldout[family][model_name][key] == pytest.approx(value, rel=1e-9), (family, key)


def _persistent_gemm(gpu: str) -> tuple[list, dict, dict]:
    """(estimates, sizes, trace parameters) of the expert GEMM's plan at 4096^3 on `gpu`."""
    from argus.eval import costmodel

    row = C.Row(
        family="gemm", group="g", label="l", ms=1.0, gpu=gpu, source="t",
        plan={"problem": {"M": 4096, "N": 4096, "K": 4096, "a_major": "K", "b_major": "K"},
              "config": {"BM": 128, "BN": 256, "CONSUMERS": 2, "STAGES": 4, "EPILOGUE": "tma"}},
    )  # fmt: skip
    ((kernel, sizes),) = C.launches(row)
    wanted = {v.name: sizes[v.name] for v in kernel.shape_vars}
    return [costmodel.estimate(kernel, wanted, gpu=gpu)], wanted, dict(kernel.params)


def test_calibrated_applies_only_where_the_shipped_fit_does():
    shipped = C.shipped()
    assert shipped is not None and shipped.gpu == "H200" and shipped.improves("gemm")
    ests, _, _ = _persistent_gemm("H200")
    got = C.calibrated(ests)
    ms, features = C.features_of(ests)
    assert got is not None and got["family"] == "gemm" and got["gpu"] == "H200"
    assert got["ms"] == pytest.approx(shipped.families["gemm"].predict(ms, features))
    assert got["ms"] != pytest.approx(ms)
    assert got["trust_k"] == shipped.trust_k("gemm")
    assert C.calibrated(_persistent_gemm("H100-SXM")[0]) is None  # fitted on H200 measurements only
    from argus.eval import costmodel
    from argus.kernels import gemm

    naive = costmodel.estimate(gemm.gemm_naive, {"M": 4096, "N": 4096, "K": 4096}, gpu="H200")
    assert C.calibrated([naive]) is None  # a kernel the fit never saw: not extrapolated


def test_the_shipped_conv_correction_applies_to_the_kernels_it_was_fitted_on():
    from argus.eval import costmodel

    def estimates(row: C.Row) -> list:
        return [costmodel.estimate(k, s, gpu="H200") for k, s in C.launches(row)]

    shipped = C.shipped()
    assert shipped.improves("conv")  # held out, the correction beat the raw estimate (docs/agent.md)
    assert shipped.families["conv"].kernels == ["conv_im2col_gemm", "conv_implicit_gemm", "conv_split_reduce"]
    ests = estimates(_conv_row({"BH": 8, "BW": 16, "BN": 64, "STAGES": 4, "CONSUMERS": 2, "SPLITS": 3}))
    got = C.calibrated(ests)
    ms, features = C.features_of(ests)
    assert got is not None and got["family"] == "conv" and got["trust_k"] == shipped.trust_k("conv")
    assert got["ms"] == pytest.approx(shipped.families["conv"].predict(ms, features))
    f32 = _conv_row({"BH": 8, "BW": 16, "BN": 32, "BK": 32, "STAGES": 4, "CONSUMERS": 2}, channels=20, dtype="f32")
    assert C.calibrated(estimates(f32)) is None  # its input's split kernel: no row measured it


def test_the_shipped_moe_correction_is_fitted_but_not_applied_within_the_margin(monkeypatch):
    """MoE's held-out median error fell by 0.2 % (1.115 -> 1.113), less than `IMPROVES_MARGIN`: its fit ships as
    data, but `calibrated` answers None and `trust_k` is the raw model's; with no margin it would apply, to the two
    grouped kernels it was fitted on and not to a lineage rung."""
    from argus.eval import costmodel
    from argus.kernels import grouped

    shipped = C.shipped()
    assert shipped.families["moe"].kernels == ["grouped_gemm_persistent", "grouped_gemm_swiglu"]
    h = shipped.heldout["moe"]
    assert h["calibrated"]["median_error"] < h["uncalibrated"]["median_error"]  # lower, but within the margin
    assert not shipped.improves("moe")
    assert shipped.trust_k("moe") == h["uncalibrated"]["trust_k"]
    ests = [costmodel.estimate(k, s, gpu="H200") for k, s in C.launches(_moe_row(_DECODE, epilogue="swiglu"))]
    assert C.calibrated(ests) is None
    monkeypatch.setattr(C, "IMPROVES_MARGIN", 0.0)
    assert shipped.improves("moe")
    got = C.calibrated(ests)
    ms, features = C.features_of(ests)
    assert got is not None and got["family"] == "moe" and got["trust_k"] == shipped.trust_k("moe")
    assert got["ms"] == pytest.approx(shipped.families["moe"].predict(ms, features))
    sizes = {"R": 100, "K": 256, "E": 3, "N": 192}
    unit_grid = grouped.grouped_gemm_units.trace(**{k: v for k, v in _DECODE.items() if k != "GROUP"})
    units = costmodel.estimate(unit_grid, sizes, gpu="H200")
    assert C.calibrated([units]) is None  # the lineage's rung: a kernel no row measured


def test_the_gate_reports_the_calibrated_estimate():
    from argus.eval import GateOptions
    from argus.eval.candidates import KernelCandidate
    from argus.eval.gate import _cost_model_stage
    from argus.eval.results import GateResult
    from argus.kernels import gemm
    from argus.tasks import get_task

    ests, sizes, params = _persistent_gemm("H200")
    candidate = KernelCandidate("persistent", gemm.gemm_warp_specialized_persistent, params)
    stage = _cost_model_stage(
        candidate, get_task("gemm"), GateOptions(device="cpu", cost_model="H200", cost_sizes=sizes),
        GateResult("persistent", "gemm"),
    )  # fmt: skip
    details = stage.details["cost_model"]
    assert details["ms"] == pytest.approx(ests[0].ms)
    assert details["calibrated"]["ms"] == pytest.approx(C.calibrated(ests)["ms"])
    assert "calibrated on measurements" in stage.reason


def test_the_gemm_tuning_budget_is_the_measured_trust():
    from argus.agent.tune import FALLBACK_GEMM_BUDGET, default_gemm_budget

    k = C.shipped().trust_k("gemm", model="library")
    assert k is not None and default_gemm_budget() == max(2, k)
    C._SHIPPED[:] = [None]  # no calibration readable
    try:
        assert default_gemm_budget() == FALLBACK_GEMM_BUDGET
    finally:
        C._SHIPPED.clear()
