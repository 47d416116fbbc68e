"""A TMA im2col load in the DSL (``X.im2col(...)``, `argus.atoms.tma`'s "im2col mode"): a probe kernel loads one
tile of flattened output positions for one filter tap into 128-byte-swizzled shared memory and stores it. The
interpreter gives the convolution's im2col (checked against numpy), the generated code issues
``UTMALDG.4D.IM2COL``, the verifier answers `unknown` (it has no model of the traversal yet) and never `verified`,
and bad uses are refused at trace time. On a GPU the kernel's output equals the interpreter's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.kernels.kernels_im2col import MISUSES, im2col_misuse, im2col_probe

from argus.lang.errors import DSLError


def expected(x: np.ndarray, k: int, s: int, p: int, th: int, tw: int) -> np.ndarray:
    n, h, w, c = x.shape
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    padded = np.zeros((n, h + 2 * p, w + 2 * p, c), dtype=x.dtype)
    padded[:, p : p + h, p : p + w] = x
    taps = padded[:, th : th + (oh - 1) * s + 1 : s, tw : tw + (ow - 1) * s + 1 : s]
    return taps.reshape(n * oh * ow, c)


CASES = [  # (N, H, W, K, S, P, BM)
    (2, 5, 6, 3, 1, 1, 16),
    (3, 7, 7, 3, 1, 1, 64),
    (2, 9, 9, 3, 2, 1, 16),
]


def _run(n, h, w, k, s, p, bm, th, tw):
    from argus.interp import run_kernel

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, h, w, 64)).astype(np.float32)
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    y = np.zeros((n * oh * ow, 64), dtype=np.float32)
    params = {"BM": bm, "K": k, "S": s, "P": p, "TH": th, "TW": tw}
    run_kernel(im2col_probe.trace(**params), {"X": x, "Y": y})
    return x, y, params


@pytest.mark.parametrize(("n", "h", "w", "k", "s", "p", "bm"), CASES)
def test_the_interpreter_loads_the_convolutions_im2col(n, h, w, k, s, p, bm) -> None:
    for th, tw in ((0, 0), (k - 1, k - 1), (k // 2, 0)):
        x, y, _ = _run(n, h, w, k, s, p, bm, th, tw)
        from argus.ir.types import bf16, round_to

        want = round_to(bf16, expected(round_to(bf16, x), k, s, p, th, tw))
        np.testing.assert_array_equal(y, want)


def test_the_code_issues_an_im2col_tma_load_and_the_kernel_verifies() -> None:
    from argus.backend.cuda.codegen import compile_kernel
    from argus.backend.cuda.inspection import sass
    from argus.verify import verify

    kernel = im2col_probe.trace(BM=64, K=3, S=2, P=1, TH=2, TW=1)
    compiled = compile_kernel(kernel)
    assert "tma_load_im2col_4d" in compiled.generated.source
    assert "UTMALDG.4D.IM2COL" in sass(compiled.module.cubin)
    (param,) = compiled.generated.tensor_maps
    assert param.im2col is not None and param.im2col.strides == (2, 2) and param.im2col.lower == (-1, -1)
    result = verify(kernel)
    assert result.verdict.value == "verified", [f.message for f in result.findings]


def test_a_start_bound_once_is_the_same_load_and_a_wrong_one_is_not_verified() -> None:
    from argus.interp import run_kernel
    from argus.verify import verify

    x, want, params = _run(3, 7, 7, 3, 1, 1, 64, 1, 2)
    y = np.zeros_like(want)
    bound = im2col_probe.trace(**params, START="bound")
    run_kernel(bound, {"X": x, "Y": y})
    np.testing.assert_array_equal(y, want)
    assert verify(bound).verdict.value == "verified"
    wrong = verify(im2col_probe.trace(**params, START="wrong"))  # every block loads the first tile's pixels
    assert wrong.verdict.value == "unknown" and [f.code for f in wrong.findings] == ["UNKNOWN_STATEMENT"]


def test_an_offset_past_the_operands_width_is_a_violation() -> None:
    from argus.verify import verify

    result = verify(im2col_probe.trace(BM=64, K=3, S=1, P=1, TH=300))  # a 4-d tensor's offsets are 8-bit
    assert result.verdict.value == "violated"
    (finding,) = [f for f in result.findings if f.verdict.value == "violated"]
    assert finding.code == "ALIGN_TMA" and "offset 0" in finding.message and "0 .. 255" in finding.message


@pytest.mark.parametrize("variant", sorted(MISUSES))
def test_bad_im2col_uses_are_refused(variant) -> None:
    with pytest.raises(DSLError, match="im2col"):
        im2col_misuse.trace(VARIANT=variant)


def _off_grid(kernel):
    """`kernel` with its im2col load's origin moved off the traversal's grid (column 0 of a stride-2 box from -1):
    what no DSL call builds (the origin is derived from the position), but a decoded IR may hold."""
    import dataclasses

    from argus.ir.nodes import Copy
    from argus.lineage.variants import map_statements

    def move(s):
        if isinstance(s, Copy) and s.src.im2col is not None:
            origin = (*s.src.origin[:2], 0, s.src.origin[3])
            return dataclasses.replace(s, src=dataclasses.replace(s.src, origin=origin))
        return s

    return dataclasses.replace(kernel, body=map_statements(kernel.body, move))


def test_an_origin_that_is_not_the_positions_pixel_is_refused() -> None:
    from argus.interp import InterpError, run_kernel
    from argus.verify import verify

    kernel = _off_grid(im2col_probe.trace(BM=16, K=3, S=2, P=1))
    x = np.zeros((1, 9, 9, 64), dtype=np.float32)
    with pytest.raises(InterpError, match="traversal grid"):
        run_kernel(kernel, {"X": x, "Y": np.zeros((25, 64), dtype=np.float32)})
    result = verify(kernel)
    assert result.verdict.value == "unknown" and [f.code for f in result.findings] == ["UNKNOWN_STATEMENT"]


@pytest.mark.gpu
def test_the_gpu_loads_what_the_interpreter_loads() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU visible to torch")
    from argus.backend.cuda.codegen import compile_kernel
    from argus.runtime import load

    for (n, h, w, k, s, p, bm), (th, tw) in itertools.product(CASES, ((0, 0), (2, 2), (1, 0))):
        x, want, params = _run(n, h, w, k, s, p, bm, th, tw)
        loaded = load(compile_kernel(im2col_probe.trace(**params)))
        xt = torch.from_numpy(x).to(torch.bfloat16).cuda()
        yt = torch.full(want.shape, float("nan"), dtype=torch.bfloat16, device="cuda")
        loaded(xt, yt)
        torch.cuda.synchronize()
        np.testing.assert_array_equal(yt.float().cpu().numpy(), want, err_msg=f"{(n, h, w, k, s, p, bm, th, tw)}")


def test_the_ir_crosses_a_process_boundary_and_prints_its_traversal() -> None:
    from argus.ir.printer import format_kernel
    from argus.ir.serialize import kernel_from_data, kernel_to_data

    kernel = im2col_probe.trace(BM=16, K=3, S=2, P=1, TH=1, TW=2)
    text = format_kernel(kernel)
    assert "im2col(lower=[-1, -1], upper=[-1, -1], strides=[2, 2], offsets=[1, 2])" in text
    again = kernel_from_data(kernel_to_data(kernel))
    assert format_kernel(again) == text
