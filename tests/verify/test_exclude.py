"""`T.exclude`: elements a kernel declares excluded count as padding for the verifier, which then proves that a mask
removes them before every reduction (attention's causal diagonal). The declaration is what makes an off-by-one
mask visible: with whole tiles there is no padding, and without it the same kernel verifies."""

import importlib.util
import pathlib

import pytest

import argus
import argus.lang as T
from argus.lang.errors import DSLError
from argus.verify import verify_kernel

CORPUS = pathlib.Path(__file__).parent / "corpus"


def _load(path: pathlib.Path, source: str | None = None):  # noqa: ANN202
    if source is not None:
        path = path.with_name(path.stem + "_undeclared.py")
        path.write_text(source)
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module.KERNEL
    finally:
        if source is not None:
            path.unlink()


def _oob(kernel) -> list[str]:  # noqa: ANN001
    return [f.code for f in verify_kernel(kernel.trace()).findings if f.code.startswith("OOB")]


def test_the_off_by_one_causal_mask_is_caught_only_where_the_exclusion_is_declared() -> None:
    path = CORPUS / "kernels_attention_causal_exclusion_off_by_one.py"
    # the row maximum and the row sum, and the excluded key's probability in P V
    assert _oob(_load(path)) == ["OOB_MASKED_REDUCTION", "OOB_MASKED_REDUCTION", "OOB_MASKED_MMA"]
    source = path.read_text()
    line = next(x for x in source.splitlines() if "T.exclude(" in x)
    assert _oob(_load(path, source.replace(line + "\n", ""))) == []  # nothing says which keys must not count


def test_the_right_mask_verifies_with_the_exclusion() -> None:
    result = verify_kernel(_load(CORPUS / "kernels_attention_causal_exclusion_ok.py").trace())
    assert not result.findings, result.findings
    masked = [c for c in result.checks if c.check == "masked reduction"]
    assert masked and all(c.verdict.value == "verified" for c in masked)


def test_exclude_takes_a_fragment_and_a_comparison() -> None:
    @argus.kernel
    def shared_operand(X: T.Tensor[("N",), T.f32]):  # noqa: F821
        with T.grid(1, threads=128):
            s = T.alloc_shared((128,), T.f32)
            T.exclude(s, lambda i: i > 3)

    @argus.kernel
    def not_a_comparison(X: T.Tensor[("N",), T.f32]):  # noqa: F821
        with T.grid(1, threads=128):
            x = T.alloc_fragment((16, 128), T.f32)
            T.exclude(x, lambda r, c: c + 3)

    with pytest.raises(DSLError, match="fragment"):
        shared_operand.trace()
    with pytest.raises(DSLError, match="comparison"):
        not_a_comparison.trace()


def test_an_exclusion_declared_after_the_fragment_was_read_is_refused_where_it_would_not_reach() -> None:
    """The verifier resolves a read through the writes and declarations before it, so a `T.exclude` after a statement
    computed from the fragment does not reach that value: a mask applied to it would go unchecked (the sliding
    window's off-by-one in `flash_attention` verified so until session 75). Declared before every read, or after
    a new write of the fragment, it is taken."""

    def kernel(order: str):  # noqa: ANN202
        @argus.kernel
        def masked(X: T.Tensor[("N", 128), T.f32], Y: T.Tensor[("N",), T.f32]):  # noqa: F821
            with T.grid(1, threads=128):
                x = T.alloc_fragment((16, 128), T.f32)
                T.copy(X.tile((0, 0), (16, 128)), x)
                if order == "before":
                    T.exclude(x, lambda r, c: c > 100)
                y = T.where(T.index(x, 1) <= 100, x, float("-inf"))
                if order == "after":
                    T.exclude(x, lambda r, c: c > 100)
                for i in T.serial(2):  # a read inside a nested block counts too
                    z = T.where(T.index(x, 1) <= 100 - i, x, float("-inf"))
                if order == "after_loop":
                    T.exclude(x, lambda r, c: c > 100)
                T.copy(X.tile((0, 0), (16, 128)), x)  # a new write: what follows reads the new value
                if order == "after_rewrite":
                    T.exclude(x, lambda r, c: c > 100)
                T.copy(T.reduce_max(T.maximum(y, z), axis=1), Y.tile((0,), (16,)))

        return masked

    for order in ("after", "after_loop"):
        with pytest.raises(DSLError, match="DSL_EXCLUDE_AFTER_READ") as e:
            kernel(order).trace()
        assert "computed from it" in str(e.value)
    for order in ("before", "after_rewrite"):
        kernel(order).trace()
