"""The flattened-position convolution (`argus.kernels.conv_im2col`: tiles of N·OH·OW positions, the
operand loaded by TMA im2col boxes): correct on the interpreter against the convolution's definition (stride,
padding, dilation, tiles crossing images, a partial last tile, several channel blocks), compiled for sm_90a with its
im2col loads, and verified: its tag assertions and its contraction-once check hold over the traversal's model, and
seeded bugs (a tap's offsets swapped, every channel block loading the first, every tap loading the first) are
caught with counterexamples."""

from __future__ import annotations

import numpy as np
import pytest

from argus.interp import run_kernel
from argus.ir.types import bf16, round_to
from argus.kernels.conv_im2col import conv_im2col_gemm

CASES = [  # (N, C, F, H, W, K, S, P, L, BN, more trace parameters)
    (2, 64, 64, 5, 5, 3, 1, 1, 1, 64, {}),
    (3, 128, 64, 4, 6, 3, 2, 1, 1, 64, {}),
    (2, 64, 128, 7, 7, 3, 1, 2, 2, 128, {}),
    (2, 64, 64, 5, 5, 3, 1, 1, 1, 64, {"CONSUMERS": 1}),
    (2, 128, 64, 5, 6, 3, 2, 1, 1, 64, {"SPLITS": 3, "OUT": "f32"}),
    (1, 64, 128, 6, 6, 3, 1, 1, 1, 128, {"SPLITS": 9, "OUT": "f32", "CONSUMERS": 1}),
    # persistent: 3 blocks walk 4 position tiles x 2 filter tiles (units of several images, a partial last tile),
    # the pipeline running on across a block's units
    (3, 64, 128, 7, 8, 3, 1, 1, 1, 64, {"BLOCKS": 3}),
    # persistent, one consumer warpgroup at two blocks per SM: 7 tiles of 64 positions over 2 blocks, strided
    (2, 128, 64, 9, 10, 3, 2, 1, 1, 64, {"BLOCKS": 2, "CONSUMERS": 1, "BLOCKS_PER_SM": 2}),
]


def reference(x: np.ndarray, w: np.ndarray, s: int, p: int, dil: int) -> np.ndarray:
    """(N, OH, OW, F) in float64: the definition, tap by tap."""
    n, h, wd, c = x.shape
    f, kh, kw, _ = w.shape
    oh = (h + 2 * p - dil * (kh - 1) - 1) // s + 1
    ow = (wd + 2 * p - dil * (kw - 1) - 1) // s + 1
    padded = np.zeros((n, h + 2 * p, wd + 2 * p, c))
    padded[:, p : p + h, p : p + wd] = x
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            taps = padded[:, i * dil : i * dil + (oh - 1) * s + 1 : s, j * dil : j * dil + (ow - 1) * s + 1 : s]
            out += taps @ w[:, i, j, :].T
    return out


@pytest.mark.parametrize(("n", "c", "f", "h", "w", "k", "s", "p", "dil", "bn", "more"), CASES)
def test_the_flattened_tiles_compute_the_convolution(n, c, f, h, w, k, s, p, dil, bn, more) -> None:
    """Tiles of 128 (two consumers) or 64 positions (one), crossing rows and images; split along K (the f32
    workspace's slices sum to the convolution; `conv_split_reduce` adds them, tested with the implicit kernel)."""
    rng = np.random.default_rng(1)
    x = round_to(bf16, rng.standard_normal((n, h, w, c))).astype(np.float32)
    wt = round_to(bf16, rng.standard_normal((f, k, k, c)) / np.sqrt(c * k * k)).astype(np.float32)
    want = reference(x.astype(np.float64), wt.astype(np.float64), s, p, dil)
    oh, ow = want.shape[1:3]
    splits = more.get("SPLITS", 1)
    y = np.zeros((splits, n * oh * ow, f) if splits > 1 else (n * oh * ow, f), dtype=np.float32)
    params = {"KH": k, "KW": k, "SH": s, "SW": s, "PH": p, "PW": p, "LH": dil, "LW": dil, "BN": bn, "CB": c // 64}
    kernel = conv_im2col_gemm.trace(**params, **more)
    run_kernel(kernel, {"X": x, "WT": wt.reshape(1, f, k * k, c), "B": np.zeros(1, np.float32), "Y": y})
    if splits > 1:
        assert all(np.abs(part).max() > 0 for part in y)  # every split computed a share
        y = y.sum(axis=0)
    np.testing.assert_allclose(y.reshape(want.shape), want, rtol=2e-2, atol=2e-2)


def test_the_bias_and_a_fused_epilogue_are_applied() -> None:
    """BIAS adds B[f] and the fused epilogue (here a ReLU then a per-channel scale) runs on the f32 value before it
    is rounded, as in the implicit kernel."""
    from argus.kernels.epilogue import Epilogue

    n, c, f, h, w = 2, 64, 64, 5, 6
    rng = np.random.default_rng(2)
    x = round_to(bf16, rng.standard_normal((n, h, w, c))).astype(np.float32)
    wt = round_to(bf16, rng.standard_normal((f, 3, 3, c)) / 24).astype(np.float32)
    bias = round_to(bf16, rng.standard_normal(f)).astype(np.float32)
    scale = round_to(bf16, rng.standard_normal(f)).astype(np.float32)
    epilogue = Epilogue.of("T.maximum(acc, 0.0) * s", s="columns")
    want = np.maximum(reference(x.astype(np.float64), wt.astype(np.float64), 1, 1, 1) + bias, 0) * scale
    y = np.zeros((n * h * w, f), dtype=np.float32)
    kernel = conv_im2col_gemm.trace(BN=64, BIAS=True, OUT="f32", EPILOGUE=epilogue)
    run_kernel(kernel, {"X": x, "WT": wt.reshape(1, f, 9, c), "B": np.stack([bias, scale]), "Y": y})
    np.testing.assert_allclose(y.reshape(want.shape), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize(("splits", "reducers", "bn"), [(2, 0, 64), (3, 2, 64), (6, 4, 128)])
def test_the_fused_split_sums_its_slices_with_the_bias_and_epilogue(splits: int, reducers: int, bn: int) -> None:
    """`conv_im2col_split_fused`: the SPLITS blocks of a tile store their slices, meet at the tile's counter, and
    the first REDUCERS (all of them when 0) each sum their share of the tile's rows, add the bias and apply the
    epilogue; the counters are left at their next generation, and a relaunch on them gives the same result."""
    from argus.kernels.conv_im2col import conv_im2col_split_fused
    from argus.kernels.epilogue import Epilogue

    n, c, f, h, w = 3, 128, 128, 5, 6  # 45 positions over 3 images: one partial position tile, 2 filter tiles of 64
    rng = np.random.default_rng(3)
    x = round_to(bf16, rng.standard_normal((n, h, w, c))).astype(np.float32)
    wt = round_to(bf16, rng.standard_normal((f, 3, 3, c)) / 34).astype(np.float32)
    bias = round_to(bf16, rng.standard_normal(f)).astype(np.float32)
    scale = round_to(bf16, rng.standard_normal(f)).astype(np.float32)
    want = np.maximum(reference(x.astype(np.float64), wt.astype(np.float64), 2, 1, 1) + bias, 0) * scale
    m = want.shape[0] * want.shape[1] * want.shape[2]
    epilogue = Epilogue.of("T.maximum(acc, 0.0) * s", s="columns")
    kernel = conv_im2col_split_fused.trace(
        SH=2, SW=2, BN=bn, CB=2, SPLITS=splits, REDUCERS=reducers, BIAS=True, OUT="f32", EPILOGUE=epilogue
    )
    counters = np.zeros(f // bn, np.int32)
    for _ in range(2):  # the second launch on the counters the first left
        y = np.full((m, f), np.nan, np.float32)
        work = np.full((splits, m, f), np.nan, np.float32)
        tensors = {"X": x, "WT": wt.reshape(1, f, 9, c), "B": np.stack([bias, scale]), "W": work, "Y": y}
        run_kernel(kernel, tensors | {"CNT": counters})
        assert all(np.abs(part).max() > 0 for part in work)  # every split computed a share
        np.testing.assert_allclose(y.reshape(want.shape), want, rtol=2e-2, atol=2e-2)
        assert (counters.view(np.uint32) >> 31).tolist() == [1] * (f // bn) or _ == 1


def test_the_fused_split_verifies_and_a_missing_or_wrong_barrier_is_caught(monkeypatch) -> None:
    """What the verifier proves of `conv_im2col_split_fused` (the planned kernel of ResNet-50's 7x7 layer, with a
    bias): the tags, contraction-once, every output and workspace element written, the slices read only after
    their writers arrived at the same tile's counter (`RACE_GLOBAL`) and the arrivals (`RACE_GROUP_RANK`,
    `OOB_GROUP_COUNTER`). Seeded: no barrier, and a counter per block (the split in its index), are `RACE_GLOBAL`
    counterexamples."""
    import argus.lang as T
    from argus.kernels.conv import conv_plan
    from argus.kernels.conv_im2col import conv_im2col_split_fused
    from argus.verify import verify

    (kernel,) = conv_plan(_conv2(32, 512, 512, 7, 7, 3, p=1, bias=True)).kernels()
    assert kernel.name == "conv_im2col_split_fused"
    result = verify(kernel)
    assert result.verdict.value == "verified", [f.message for f in result.findings]
    ran = {c.check: c.verdict.value for c in result.checks if c.target.startswith(("W", "CNT"))}
    assert ran["reads of other blocks' stores"] == "verified" and ran["group barrier arrivals"] == "verified", ran
    real = T.group_barrier
    for bug, barrier in {
        "no barrier": lambda counters, index, rank, count: None,
        "a counter per block": lambda counters, index, rank, count: real(counters, index * count + rank, 0, 1),
    }.items():
        monkeypatch.setattr(T, "group_barrier", barrier)
        seeded = conv_im2col_split_fused.trace(CB=2, SPLITS=2, BN=128, STAGES=4)
        found = {f.code for f in verify(seeded).findings}
        assert "RACE_GLOBAL" in found, (bug, found)
    monkeypatch.setattr(T, "group_barrier", real)


def test_it_compiles_to_im2col_loads_and_verifies() -> None:
    """Every tag assertion proves (row m of the A stage holds the pixel tap (kh, kw) reads for output position p0 +
    m, through the traversal's model), and so does the contraction-once check over the im2col windows (no input
    element enters one output position's sum twice: an element loaded for two positions, by two taps, is two
    products)."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.backend.cuda.inspection import sass
    from argus.verify import verify

    kernel = conv_im2col_gemm.trace(SH=2, SW=2, CB=2)
    assert "UTMALDG.4D.IM2COL" in sass(compile_kernel(kernel).module.cubin)
    result = verify(kernel)
    assert result.verdict.value == "verified", [f.message for f in result.findings]
    checked = [c for c in result.checks if c.check == "contraction accumulated once"]
    assert {c.verdict.value for c in checked} == {"verified"} and not any(c.not_checked for c in checked)
    assert any(c.target.startswith("X into acc") for c in checked), [c.target for c in checked]


@pytest.mark.parametrize("consumers", [2, 1])
def test_the_persistent_form_compiles_and_verifies(consumers: int) -> None:
    """The persistent blocks' unit loop (BLOCKS > 0; one consumer warpgroup at two blocks per SM): the tags and the
    contraction-once check prove over every unit a block walks, and the K loop's `wgmma` stays pipelined."""
    from argus.backend.cuda.codegen import compile_kernel
    from argus.verify import verify

    kernel = conv_im2col_gemm.trace(
        BN=64, CONSUMERS=consumers, BLOCKS=132 * (3 - consumers), BLOCKS_PER_SM=3 - consumers, STAGES=4
    )
    result = verify(kernel)
    assert result.verdict.value == "verified", [f.message for f in result.findings]
    assert not [c for c in result.checks if c.verdict.value != "verified" and not c.not_checked]
    compiled = compile_kernel(kernel)
    assert compiled.module.warnings == (), compiled.module.warnings  # no wgmma serialized (C7514)
    assert compiled.resources.spill_stores == 0


def test_persistent_blocks_take_whole_k_loops() -> None:
    from argus.lang import DSLError

    with pytest.raises(DSLError, match="SPLITS = 1"):
        conv_im2col_gemm.trace(BLOCKS=132, SPLITS=3, OUT="f32")
    with pytest.raises(DSLError, match="BLOCKS_PER_SM"):
        conv_im2col_gemm.trace(BLOCKS=264, BLOCKS_PER_SM=2)  # two consumer warpgroups: one block an SM


@pytest.mark.parametrize("bug", ["channel block", "tap"])
def test_a_load_twice_into_one_sum_is_caught(bug: str) -> None:
    """The seeded bugs: every channel block of a tap loads the first one's channels, or every tap loads the first
    tap's pixels (offsets 0): an input element enters one output position's sum twice, a
    `COVERAGE_CONTRACTION_TWICE` counterexample naming the element and the two K-steps."""
    import dataclasses

    from argus.ir.nodes import Copy
    from argus.lineage.variants import map_statements
    from argus.verify import verify

    def seed(s):
        if isinstance(s, Copy) and s.src.im2col is not None:
            if bug == "channel block":
                return dataclasses.replace(s, src=dataclasses.replace(s.src, origin=(*s.src.origin[:-1], 0)))
            spec = dataclasses.replace(s.src.im2col, offsets=(0, 0))
            return dataclasses.replace(s, src=dataclasses.replace(s.src, im2col=spec))
        return s

    kernel = conv_im2col_gemm.trace(CB=2)
    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, seed)))
    twice = [f for f in result.findings if f.code == "COVERAGE_CONTRACTION_TWICE"]
    assert result.verdict.value == "violated" and twice, [f.code for f in result.findings]
    cex = twice[0].counterexample
    assert cex is not None and [a.element.buffer for a in cex.accesses] == ["X", "X"]
    assert cex.accesses[0].loops["k"] != cex.accesses[1].loops["k"]


def test_a_load_of_the_wrong_tap_is_caught() -> None:
    """The seeded bug: the im2col offsets swapped (the tap (kw, kh) loaded for (kh, kw)): the A-stage assertion fails
    with a counterexample."""
    import dataclasses

    from argus.ir.nodes import Copy
    from argus.lineage.variants import map_statements
    from argus.verify import verify

    def swap(s):
        if isinstance(s, Copy) and s.src.im2col is not None:
            spec = s.src.im2col
            spec = dataclasses.replace(spec, offsets=tuple(reversed(spec.offsets)))
            return dataclasses.replace(s, src=dataclasses.replace(s.src, im2col=spec))
        return s

    kernel = conv_im2col_gemm.trace(CB=1)
    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, swap)))
    assert result.verdict.value == "violated"
    violated = [f for f in result.findings if f.verdict.value == "violated"]
    assert violated and all(f.code == "TAG_ASSERT" for f in violated)
    assert violated[0].counterexample is not None and violated[0].counterexample.element.buffer == "sA"


def test_a_split_whose_shares_all_take_the_first_is_caught() -> None:
    """The seeded bug: every split multiplies the first split's K-steps (the split index left out of the K-step on
    both operands and in the tag assertions, kept in the workspace slice it stores): no element enters one sum
    twice and every tag holds, but the weights of the later taps are never loaded: `COVERAGE_CONTRACTION` on WT."""
    import dataclasses

    from argus.ir.nodes import Copy, For, If, Let, Role, Space
    from argus.ir.rewrite import substitute_stmts
    from argus.lineage.variants import map_statements
    from argus.verify import verify

    kernel = conv_im2col_gemm.trace(CB=2, SPLITS=3, OUT="f32")
    split = kernel.block_vars[2]

    def first_share(s):  # noqa: ANN001, ANN202
        if isinstance(s, For | If | Let | Role) or (isinstance(s, Copy) and s.dst.buffer.space == Space.GLOBAL):
            return s
        return substitute_stmts((s,), {split: 0})[0]

    assert verify(kernel).verdict.value == "verified"
    result = verify(dataclasses.replace(kernel, body=map_statements(kernel.body, first_share)))
    found = [f for f in result.findings if f.code == "COVERAGE_CONTRACTION"]
    assert result.verdict.value == "violated" and found and "of WT" in found[0].message, result.findings
    tap = int(found[0].counterexample.variables["element"].strip("()").split(",")[2])
    assert tap >= 3  # 9 taps x 2 channel blocks in 3 shares: the first share is taps 0-2


# --- the planner's flattened-position tile (argus.kernels.conv: ImplicitConfig.FLAT) ---------------------------------


def _conv2(n, c, f, h, w, k, s=1, p=0, d=1, bias=False, dtype="bf16", groups=1):  # noqa: ANN001, ANN202
    from argus.kernels.conv import Conv

    return Conv(2, n, c, f, groups, (1, h, w), (1, k, k), (1, s, s), (0, p, p), (1, d, d), bias, dtype)


def test_the_planner_takes_flattened_tiles_where_the_implicit_tile_wastes_positions(monkeypatch) -> None:
    """`implicit_config`: a flattened tile where the implicit kernel's BH x BW tile would run one block per tile
    (ResNet-50's 28x28, 14x14 and 7x7 3x3 layers, a 56x56 3x3 of 256 channels), or persistent wasting at least
    `FLAT_WASTE` (7x7 1x1), persistent itself where its tiles make more than one wave (`FLAT_PERSISTENT`, which also
    takes the short K loops at 56x56 and 28x28 the persistent implicit tile had); the flattened tile splits its K loop
    where few tiles would leave the GPU idle."""
    from dataclasses import replace

    import argus.kernels.conv as conv_module
    from argus.kernels.conv import FLAT_MAX_STAGES, implicit_config, implicit_tiles

    for conv in (_conv2(32, 128, 128, 28, 28, 3, p=1), _conv2(32, 256, 256, 14, 14, 3, p=1),
                 _conv2(32, 256, 256, 28, 28, 3, s=2, p=1), _conv2(8, 256, 128, 56, 56, 3, p=1)):  # fmt: skip
        cfg = implicit_config(conv)
        assert cfg.FLAT and (cfg.BH * cfg.BW, cfg.BN, cfg.CONSUMERS, cfg.SPLITS) == (128, 128, 2, 1), conv
        assert cfg.STAGES == FLAT_MAX_STAGES and cfg.label().startswith("flat 128x128")
        # more than one wave of tiles (196 at 28x28, 196 at 56x56 batch 8) runs persistent, a wave or less (98 at
        # 14x14) a block per tile
        assert cfg.BLOCKS == (132 if implicit_tiles(conv, replace(cfg, BLOCKS=0)) > 132 else 0), cfg.label()
    # a persistent 8x8 tile wasting 31 % of 7x7: flattened; a short K loop of 2048 filters takes a wide tile (224:
    # ten tiles of filters, one wave of 130 blocks, modelled quicker than 104 of 256)
    wide = implicit_config(_conv2(32, 512, 2048, 7, 7, 1))
    assert wide.FLAT and (wide.BN, wide.SPLITS) == (224, 1) and wide.STAGES >= 3
    # 14x14 at batch 32: 49 tiles of 128 positions per filter tile, where 8x16 tiles made 64
    assert (
        implicit_tiles(_conv2(32, 256, 256, 14, 14, 3, p=1), implicit_config(_conv2(32, 256, 256, 14, 14, 3, p=1)))
        == 98
    )
    # few tiles: split along K (7x7 at batch 8 with the reduction in a second launch: 4 x 8 tiles of 64 filters, 72
    # K-steps in four shares of 18; summed in the same launch, `FLAT_FUSE_SPLITS`, below)
    monkeypatch.setattr(conv_module, "FLAT_FUSE_SPLITS", False)
    few = implicit_config(_conv2(8, 512, 512, 7, 7, 3, p=1))
    assert few.FLAT and (few.BN, few.SPLITS, few.FUSE) == (64, 4, False) and "split4" in few.label()
    monkeypatch.setattr(conv_module, "FLAT_FUSE_SPLITS", True)
    # the persistent implicit tiles of short K loops at 56x56 and 28x28 give way to the persistent flattened tile
    # (`FLAT_PERSISTENT`), which computes no position past an image's edge; without it they stay
    for conv in (_conv2(32, 64, 64, 56, 56, 1), _conv2(32, 64, 64, 56, 56, 3, p=1),
                 _conv2(32, 128, 512, 28, 28, 1, bias=True)):  # fmt: skip
        cfg = implicit_config(conv)
        assert cfg.FLAT and cfg.BLOCKS == 132 and cfg.SPLITS == 1, (conv, cfg.label())
        monkeypatch.setattr(conv_module, "FLAT_PERSISTENT", False)
        assert not implicit_config(conv).FLAT, conv
        monkeypatch.setattr(conv_module, "FLAT_PERSISTENT", True)


def test_a_split_flat_tile_of_one_wave_sums_its_slices_in_its_own_launch(monkeypatch) -> None:
    """`FLAT_FUSE_SPLITS`: a split flattened tile whose blocks (tiles x splits) are one wave runs
    `conv_im2col_split_fused` (no `conv_split_reduce`), and the model no longer charges it the reduction's launch and
    read: ResNet-50's 7x7 3x3 at batch 32 keeps its two splits of 52 tiles (104 blocks), at batch 8 takes 128
    filters in eight splits (16 tiles, 128 blocks) where two launches took 64 in four; more blocks than SMs, or a
    keep the two launches; the blocks that sum are as many as divide the tile into shares of whole vectors."""
    from dataclasses import replace

    import argus.kernels.conv as conv_module
    from argus.kernels.conv import conv_plan, flat_fuse_refusal, implicit_config, implicit_tiles

    r50 = _conv2(32, 512, 512, 7, 7, 3, p=1)
    cfg = implicit_config(r50)
    assert cfg.FLAT and (cfg.BN, cfg.SPLITS, cfg.FUSE) == (128, 2, True) and cfg.label().endswith("split2 fused")
    assert implicit_tiles(r50, cfg) * cfg.SPLITS == 104 and cfg.reducers() == 2
    assert [k.name for k in conv_plan(r50).kernels()] == ["conv_im2col_split_fused"]
    few = implicit_config(_conv2(8, 512, 512, 7, 7, 3, p=1))
    assert (few.BN, few.SPLITS, few.FUSE) == (128, 8, True) and few.reducers() == 8
    # on 64 SMs (a MIG slice) 104 blocks are two waves: the split keeps its second launch
    assert "more than one wave" in flat_fuse_refusal(r50, cfg, sms=64)
    assert not implicit_config(r50, sms=64).FUSE
    # 128 positions in 7 shares: no count of 7 or fewer gives 64 x 128 threads whole vectors but 4 (32 rows each)
    assert replace(cfg, SPLITS=7).reducers() == 4
    # 128 positions x 8 filters in two splits: only a block's share of all 128 rows fills 256 threads' vectors
    assert replace(cfg, BN=8).reducers() == 1
    monkeypatch.setattr(conv_module, "FLAT_FUSE_SPLITS", False)
    assert not implicit_config(r50).FUSE


def test_the_filter_width_is_fitted_to_the_filters(monkeypatch) -> None:
    """`flat_widths`: the widths of k near-equal cuts of the filters, multiples of 32 from 64 to 256 (odd multiples of
    16 serialize the K loop's wgmma: `test_fitted_widths_keep_the_wgmma_pipeline`), 128 first; 64 alone up to 64
    filters. `flat_config` takes the one whose waves the model times least: Stable Diffusion's 320 filters at 64x64
    two tiles of 160 (one wave of 128 tiles, where 128 filters a tile made 192: two waves), 384 filters at 14x14 two of
    192, a single tile of 160 filters; a power of two keeps 128 or 256. With `FLAT_FITTED_WIDTHS` off, the rule
    before: 128, or 256 of a multiple of 256."""
    import argus.kernels.conv as C  # noqa: N812

    assert C.flat_widths(_conv2(2, 320, 320, 64, 64, 3, p=1)) == (128, 64, 96, 160)
    assert C.flat_widths(_conv2(2, 64, 48, 8, 8, 3, p=1)) == (64,)
    assert C.flat_widths(_conv2(2, 64, 2048, 8, 8, 1)) == (128, 64, 96, 160, 192, 224, 256)
    for conv in (_conv2(2, 320, 320, 64, 64, 3, p=1), _conv2(2, 96, 208, 35, 35, 3, p=1), _conv2(4, 64, 2000, 9, 9, 3)):
        assert all(bn % C.FLAT_WIDTH_STEP == 0 and 64 <= bn <= 256 for bn in C.flat_widths(conv)), conv
    assert C.flat_tile_time(128) == 1.0 and C.flat_tile_time(256) == C.FLAT_WIDE_TILE_TIME
    assert C.flat_tile_time(64) == C.FLAT_NARROW_TILE_TIME < C.flat_tile_time(96) < 1.0 < C.flat_tile_time(160)
    planned = {
        _conv2(2, 320, 320, 64, 64, 3, p=1, dtype="f16"): 160,
        _conv2(32, 192, 384, 14, 14, 3, p=1): 192,
        _conv2(8, 96, 160, 33, 33, 3, p=1): 160,
        _conv2(32, 128, 128, 28, 28, 3, p=1): 128,
        _conv2(16, 256, 256, 56, 56, 3, p=1): 256,
    }
    for conv, bn in planned.items():
        assert C.implicit_config(conv).BN == bn, (conv, C.implicit_config(conv).label())
    monkeypatch.setattr(C, "FLAT_FITTED_WIDTHS", False)
    assert C.flat_widths(_conv2(2, 320, 320, 64, 64, 3, p=1)) == (128,)
    assert C.flat_widths(_conv2(16, 256, 512, 56, 56, 3, p=1)) == (128, 256)
    assert C.implicit_config(_conv2(2, 320, 320, 64, 64, 3, p=1, dtype="f16")).BN == 128


def test_what_the_flattened_tile_refuses() -> None:
    """`flat_refusal`: f32 (the split planes are the implicit kernel's), groups, fewer than 64 channels, a 1-d or
    3-d convolution, a transposed convolution's stride phase (its padding differs at the ends), and a traversal TMA's
    im2col mode cannot address in a 4-d tensor (padding past its 8-bit corners)."""
    from dataclasses import replace

    from argus.kernels.conv import flat_refusal, implicit_config

    base = _conv2(8, 128, 128, 14, 14, 3, p=1)
    assert flat_refusal(base) is None
    refused = {
        "f32": replace(base, dtype="f32"),
        "groups": _conv2(8, 128, 128, 14, 14, 3, p=1, groups=2),
        "channels": _conv2(8, 32, 128, 14, 14, 3, p=1),
        "2-d": replace(base, rank=1, size=(1, 1, 14), kernel=(1, 1, 3), stride=(1, 1, 1), padding=(0, 0, 1)),
        "padding at both ends": replace(base, padding_end=(0, 2, 2)),
        "im2col": _conv2(1, 64, 64, 300, 300, 3, p=200),
    }
    for what, conv in refused.items():
        why = flat_refusal(conv)
        assert why is not None, what
        assert not implicit_config(conv).FLAT, what


PLANNED = {  # (convolution, fused epilogue or None)
    "3x3, bias, 2 images of 7x5 (tiles across images)": (_conv2(2, 128, 72, 7, 5, 3, p=1, bias=True), None),
    "3x3/2 f16, padding 2, dilation 2": (_conv2(3, 128, 16, 11, 10, 3, s=2, p=2, d=2, dtype="f16"), None),
    "1x1 of 640 channels (10 K-steps), bias": (_conv2(2, 640, 24, 3, 5, 1, bias=True), None),
    "3x3 with a fused epilogue": (_conv2(2, 128, 24, 6, 7, 3, p=1, bias=True), "epilogue"),
}


@pytest.mark.parametrize("name", list(PLANNED))
@pytest.mark.parametrize("form", ["whole", "split", "fused", "persistent"])
def test_a_planned_flat_convolution_matches_torch_on_the_interpreter(name: str, form: str, monkeypatch) -> None:
    """Through `run_on_interpreter`, the kernels and parameters a GPU call launches: the flattened tile unsplit,
    split (the fewest shares above one that divide its K-steps; the partial sums reduced by `conv_split_reduce`,
    which adds the bias and the epilogue), split and summed in the same launch (`conv_im2col_split_fused`, which
    adds them itself), and persistent (two blocks of one consumer warpgroup walking the units)."""
    from dataclasses import replace

    import torch
    import torch.nn.functional as F  # noqa: N812

    import argus.kernels.conv as conv_module
    from argus.kernels.conv import conv_plan, implicit_config, implicit_k_steps, run_on_interpreter, with_stages
    from argus.kernels.epilogue import Epilogue

    conv, which = PLANNED[name]
    planned = implicit_config(conv)
    assert planned.FLAT, planned
    steps = implicit_k_steps(conv, planned.BK)
    splits = next(s for s in range(2, steps + 1) if steps % s == 0) if form in ("split", "fused") else 1
    config = with_stages(conv, replace(planned, SPLITS=splits, FUSE=form == "fused"), conv_module.FLAT_MAX_STAGES)
    if form == "persistent":
        config = replace(planned, BW=64, CONSUMERS=1, BLOCKS=2, SPLITS=1)
        config = with_stages(conv, config, conv_module.FLAT_MAX_STAGES)
        assert conv_module.implicit_params(conv, config, nchw=False)["BLOCKS_PER_SM"] == 2
    monkeypatch.setattr(conv_module, "implicit_config", lambda c, sms=132: config)
    conv_plan.cache_clear()
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[conv.dtype]
    gen = torch.Generator().manual_seed(conv.channels + splits)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(shape, generator=gen, dtype=torch.float64).to(dtype).double()

    _, kh, kw = conv.kernel
    x, w = draw(conv.batch, conv.channels, *conv.size[1:]), draw(conv.filters, conv.channels, kh, kw)
    b = draw(conv.filters) if conv.bias else None
    epilogue, operands = None, []
    if which == "epilogue":
        epilogue = Epilogue.of("T.maximum(acc * scale, 0.0) + shift", scale="columns", shift="columns")
        operands = [draw(conv.filters), draw(conv.filters)]
    try:
        kinds = [k.name for k in conv_plan(conv, epilogue=epilogue).kernels()]
        if form == "fused":
            assert kinds == ["conv_im2col_split_fused"]
        else:
            assert kinds == ["conv_im2col_gemm"] + (["conv_split_reduce"] if splits > 1 else [])
        got = run_on_interpreter(conv, x.numpy(), w.numpy(), None if b is None else b.numpy(), epilogue=epilogue,
                                 operands=[o.numpy() for o in operands])  # fmt: skip
    finally:
        conv_plan.cache_clear()
    want = F.conv2d(x, w, b, conv.stride[1:], conv.padding[1:], conv.dilation[1:])
    if epilogue is not None:
        want = torch.clamp_min(want * operands[0].view(1, -1, 1, 1), 0.0) + operands[1].view(1, -1, 1, 1)
    got = np.asarray(got).reshape(want.shape)
    assert not np.isnan(got).any(), "an output element was never written"
    assert float(np.abs(got - want.numpy()).max() / max(want.abs().max().item(), 1.0)) < 1e-2


def test_the_planned_flat_kernels_verify() -> None:
    """What `argus solve` verifies for a planned flattened tile: the kernel and, split along K, the reduction (or
    the split kernel that sums its slices itself, 7x7 at batch 8); no finding, every tag assertion and
    contraction-once check proved."""
    from argus.kernels.conv import conv_plan
    from argus.verify import verify

    planned = (
        _conv2(32, 256, 256, 14, 14, 3, p=1, bias=True),
        _conv2(8, 512, 512, 7, 7, 3, s=1, p=1),
        _conv2(32, 64, 64, 56, 56, 3, p=1, bias=True),  # persistent (FLAT_PERSISTENT): 784 units on 132 blocks
    )
    assert conv_plan(planned[2]).implicit.BLOCKS == 132
    assert [k.name for k in conv_plan(planned[1]).kernels()] == ["conv_im2col_split_fused"]
    for conv in planned:
        found = conv_plan(conv).kernels()
        fused = found[0].name == "conv_im2col_split_fused"
        assert found[0].name == "conv_im2col_gemm" or fused
        for kernel in found:
            result = verify(kernel)
            assert result.verdict.value == "verified", [f.message for f in result.findings]
            assert all(c.verdict.value == "verified" for c in result.checks if c.check == "tag assertion")
        # every output element written, every weight loaded (X's im2col windows are not read by the coverage check)
        coverage = {c.target.split()[0]: c.not_checked for c in verify(found[0]).checks if "coverage" in c.check}
        assert coverage == {"Y": False, "WT": False, "X": True} | ({"W": False} if fused else {}), coverage


gpu = pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="no CUDA GPU visible to torch")


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nchw", "channels_last"])
def test_a_flat_call_on_the_gpu_matches_cudnn(layout: str) -> None:
    """`LibraryConv` on CUDA tensors through planned flattened tiles, unsplit (320 filters: two tiles of 160) and
    split with the slices summed in the same launch (28x28 at batch 4 with a bias, 7x7 at batch 8, four tiles of 96
    with a bias), of fitted filter widths, both layouts: against conv2d in float64."""
    import torch
    import torch.nn.functional as F  # noqa: N812

    from argus.kernels.conv import LibraryConv, conv_plan

    convs = (
        _conv2(4, 128, 128, 28, 28, 3, p=1, bias=True),
        _conv2(8, 512, 512, 7, 7, 3, p=1),
        _conv2(2, 320, 320, 64, 64, 3, p=1, dtype="f16"),
        _conv2(2, 160, 320, 24, 24, 3, p=1, bias=True),
    )
    assert {conv_plan(c).implicit.BN for c in convs[2:]} == {160, 96}, [conv_plan(c).implicit.label() for c in convs]
    assert [conv_plan(c).implicit.FUSE for c in convs] == [True, True, False, True]
    for conv in convs:
        assert conv_plan(conv).implicit.FLAT
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[conv.dtype]
        gen = torch.Generator(device="cuda").manual_seed(7)
        x = torch.randn(conv.batch, conv.channels, *conv.size[1:], device="cuda", generator=gen).to(dtype)
        w = (torch.randn(conv.filters, conv.channels, 3, 3, device="cuda", generator=gen) / 30).to(dtype)
        b = torch.randn(conv.filters, device="cuda", generator=gen).to(dtype) if conv.bias else None
        if layout == "channels_last":
            x = x.to(memory_format=torch.channels_last)
        call = LibraryConv("conv", conv)
        out = torch.empty((conv.batch, conv.filters, *x.shape[2:]), dtype=x.dtype, device="cuda")
        if layout == "channels_last":
            out = out.to(memory_format=torch.channels_last)
        call(*([x, w, b] if b is not None else [x, w]), out)
        want = F.conv2d(x.double(), w.double(), None if b is None else b.double(), padding=1)
        assert ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item() < 1e-2, conv


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("consumers", [2, 1])
def test_a_persistent_flat_call_on_the_gpu_matches_cudnn(consumers: int, monkeypatch) -> None:
    """`LibraryConv` on CUDA tensors through the flattened tile's persistent form (a block an SM with two consumer
    warpgroups, two an SM with one): ResNet-50's 3x3 64->64 at 56x56 (784 or 1568 units of one filter tile, several
    per block), a strided layer with a bias and a partial last tile, channels last: against conv2d in float64."""
    from dataclasses import replace

    import torch
    import torch.nn.functional as F  # noqa: N812

    import argus.kernels.conv as conv_module
    from argus.kernels.conv import LibraryConv, conv_plan, flat_config, with_stages

    for conv in (_conv2(32, 64, 64, 56, 56, 3, p=1), _conv2(3, 128, 192, 29, 30, 3, s=2, p=1, bias=True)):
        config = replace(
            flat_config(conv), BW=64 * consumers, CONSUMERS=consumers, SPLITS=1, BLOCKS=132 * (3 - consumers)
        )
        config = with_stages(conv, config, conv_module.FLAT_MAX_STAGES)
        monkeypatch.setattr(conv_module, "implicit_config", lambda c, sms=132, config=config: config)
        conv_plan.cache_clear()
        try:
            assert conv_plan(conv).implicit.BLOCKS == config.BLOCKS
            dtype = torch.bfloat16
            gen = torch.Generator(device="cuda").manual_seed(11)
            x = torch.randn(conv.batch, conv.channels, *conv.size[1:], device="cuda", generator=gen).to(dtype)
            x = x.to(memory_format=torch.channels_last)
            w = (torch.randn(conv.filters, conv.channels, 3, 3, device="cuda", generator=gen) / 30).to(dtype)
            b = torch.randn(conv.filters, device="cuda", generator=gen).to(dtype) if conv.bias else None
            want = F.conv2d(
                x.double(), w.double(), None if b is None else b.double(), stride=conv.stride[1:], padding=1
            )
            out = torch.empty(want.shape, dtype=dtype, device="cuda").to(memory_format=torch.channels_last)
            LibraryConv("conv", conv)(*([x, w, b] if b is not None else [x, w]), out)
            err = ((out.double() - want).abs().max() / want.abs().max().clamp_min(1.0)).item()
            assert err < 1e-2, (conv, config.label(), err)
        finally:
            conv_plan.cache_clear()


@gpu
@pytest.mark.gpu
def test_a_fused_split_call_on_the_gpu_equals_the_two_launches(monkeypatch) -> None:
    """ResNet-50's 7x7 3x3 at batch 32 and 8 with a bias: the split summed in its own launch
    (`conv_im2col_split_fused`) gives bit for bit what the split kernel and `conv_split_reduce` give (the same sums
    in the same order), and so does a second call, which replays the launch on the counters the first left."""
    from dataclasses import replace

    import torch

    import argus.kernels.conv as conv_module
    from argus.kernels.conv import LibraryConv, conv_plan

    for batch in (32, 8):
        conv = _conv2(batch, 512, 512, 7, 7, 3, p=1, bias=True)
        gen = torch.Generator(device="cuda").manual_seed(batch)
        x = torch.randn(batch, 512, 7, 7, device="cuda", generator=gen).to(torch.bfloat16)
        x = x.to(memory_format=torch.channels_last)
        w = (torch.randn(512, 512, 3, 3, device="cuda", generator=gen) / 68).to(torch.bfloat16)
        b = torch.randn(512, device="cuda", generator=gen).to(torch.bfloat16)
        outs = []
        conv_plan.cache_clear()
        fused = conv_plan(conv).implicit
        assert fused.FUSE and fused.SPLITS == (2 if batch == 32 else 8), fused.label()
        for fuse in (True, False, True):
            config = replace(fused, FUSE=fuse)
            monkeypatch.setattr(conv_module, "implicit_config", lambda c, sms=132, config=config: config)
            conv_plan.cache_clear()
            assert conv_plan(conv).implicit.FUSE == fuse
            call = LibraryConv("conv", conv)
            out = torch.empty((batch, 512, 7, 7), dtype=torch.bfloat16, device="cuda")
            out = out.to(memory_format=torch.channels_last)
            for _ in range(2 if fuse else 1):  # the second call replays the first's launches
                out.zero_()
                call(x, w, b, out)
                outs.append(out.clone())
            monkeypatch.undo()  # the next batch plans its own tile
        conv_plan.cache_clear()
        want = torch.nn.functional.conv2d(x.double(), w.double(), b.double(), padding=1)
        assert ((outs[0].double() - want).abs().max() / want.abs().max()).item() < 1e-2
        assert all(torch.equal(o, outs[0]) for o in outs[1:]), batch
