"""A TMA im2col load in the DSL (``X.im2col(...)``, `argus.atoms.tma`'s "im2col mode"): a probe kernel loads one
tile of flattened output positions for one filter tap into 128-byte-swizzled shared memory and stores it. The
interpreter gives the convolution's im2col (checked against numpy), the generated code issues
``UTMALDG.4D.IM2COL``, the verifier answers `unknown` (it has no model of the traversal yet) and never `verified`,
and bad uses are refused at trace time. On a GPU the kernel's output equals the interpreter's."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.kernels.kernels_im2col import MISUSES, im2col_misuse, im2col_probe, off_grid

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


def test_the_code_issues_an_im2col_tma_load_and_the_verifier_says_unknown() -> None:
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
    assert result.verdict.value == "unknown"
    assert [f.code for f in result.findings] == ["UNKNOWN_STATEMENT"]
    assert "im2col" in result.findings[0].message


@pytest.mark.parametrize("variant", sorted(MISUSES))
def test_bad_im2col_uses_are_refused(variant) -> None:
    with pytest.raises(DSLError, match="im2col"):
        im2col_misuse.trace(VARIANT=variant)


def test_a_start_off_the_traversal_grid_is_an_interpreter_error() -> None:
    from argus.interp import InterpError, run_kernel

    x = np.zeros((1, 9, 9, 64), dtype=np.float32)
    with pytest.raises(InterpError, match="traversal grid"):
        run_kernel(off_grid.trace(), {"X": x, "Y": np.zeros((16, 64), dtype=np.float32)})


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
