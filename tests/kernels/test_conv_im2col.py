"""The experimental flattened-position convolution (`argus.kernels.conv_im2col`: tiles of N·OH·OW positions, the
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

CASES = [  # (N, C, F, H, W, K, S, P, L, BN)
    (2, 64, 64, 5, 5, 3, 1, 1, 1, 64),
    (3, 128, 64, 4, 6, 3, 2, 1, 1, 64),
    (2, 64, 128, 7, 7, 3, 1, 2, 2, 128),
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


@pytest.mark.parametrize(("n", "c", "f", "h", "w", "k", "s", "p", "dil", "bn"), CASES)
def test_the_flattened_tiles_compute_the_convolution(n, c, f, h, w, k, s, p, dil, bn) -> None:
    rng = np.random.default_rng(1)
    x = round_to(bf16, rng.standard_normal((n, h, w, c))).astype(np.float32)
    wt = round_to(bf16, rng.standard_normal((f, k, k, c)) / np.sqrt(c * k * k)).astype(np.float32)
    want = reference(x.astype(np.float64), wt.astype(np.float64), s, p, dil)
    oh, ow = want.shape[1:3]
    y = np.zeros((n * oh * ow, f), dtype=np.float32)
    params = {"KH": k, "KW": k, "SH": s, "SW": s, "PH": p, "PW": p, "LH": dil, "LW": dil, "BN": bn, "CB": c // 64}
    kernel = conv_im2col_gemm.trace(**params)
    run_kernel(kernel, {"X": x, "WT": wt.reshape(1, f, k * k, c), "Y": y})
    np.testing.assert_allclose(y.reshape(want.shape), want, rtol=2e-2, atol=2e-2)


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
