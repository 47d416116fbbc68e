"""Kernels of the padding tests (`test_padding.py`): which elementwise statements are folds into an accumulator."""

import argus
import argus.lang as T


# one statement per case; `test_accumulation_steps_are_recognized_only_in_place` names each by its line
@argus.kernel
def FOLDS(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M", "N"), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)
        other = T.alloc_fragment((BM, BN), T.f32)
        x = T.alloc_fragment((BM, BN), T.f32)
        T.fill(acc, 0.0)
        T.copy(X.tile((bm, 0), (BM, BN)), x)
        T.copy(acc + x, acc)  # fold: acc at 0
        T.copy(x + acc, acc)  # fold: acc at 1
        T.copy(acc - x, acc)  # fold: subtracting the term
        T.copy(T.maximum(acc, x), acc)  # fold: maximum
        T.copy(T.minimum(x, acc), acc)  # fold: minimum, acc at 1
        T.copy(x - acc, acc)  # not: the accumulator is subtracted
        T.copy(acc * x, acc)  # not: a product
        T.copy(acc + 1.0, acc)  # not: a scalar term
        T.copy(acc + x, other)  # not: the result lands in another buffer
        t = acc + x  # fold: a temporary copied whole into acc by the next statement
        T.copy(t, acc)
        u = T.maximum(acc, x)  # fold: copied back after a statement that does not write it (interleaved folds)
        T.copy(x, other)
        T.copy(u, acc)
        v = T.minimum(acc, x)  # not: the temporary is overwritten before the copy back
        T.copy(x, v)
        T.copy(v, acc)
        y = acc + x  # not: no copy back
        T.copy(y, Y.tile((bm, 0), (BM, BN)))


# the accumulator form of `oob_tile_accumulator_sum_ok`, but the fold's result lands in a second buffer that is
# reduced: its padded lanes are `acc + 0` written elsewhere, padding of unknown value (a conservative finding)
@argus.kernel
def FOLD_INTO_ANOTHER_BUFFER(X: T.Tensor[("M", "N"), T.f32], Y: T.Tensor[("M",), T.f32], BM: int = 4, BN: int = 128):
    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):
        acc = T.alloc_fragment((BM, BN), T.f32)
        out = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 0), (BM, BN)), acc, pad=0.0)
        x = T.alloc_fragment((BM, BN), T.f32)
        T.copy(X.tile((bm, 1), (BM, BN)), x, pad=0.0)
        T.copy(acc + x, out)
        T.copy(T.reduce_sum(out, axis=1), Y.tile(bm, BM))
