"""The operators the library's references are written in (`argus.kernels.workloads`), so that each reference is
written once and runs on numpy arrays and on torch tensors alike.

On numpy arrays (float64) a reference checks the kernels on the CPU interpreter, with no PyTorch installed; on torch
tensors it is the gate's reference and the PyTorch-eager baseline, so there each operator is PyTorch's own
(``torch.softmax``, ``torch.nn.functional.layer_norm``, ``torch.relu``). The matrix product and the elementwise
arithmetic need no operator here: ``A @ B``, ``B.T`` and ``A + B`` mean the same on both.

PyTorch is imported only when a torch tensor is seen.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def softmax(x: Any, axis: int) -> Any:
    """``exp(x - max) / sum(exp(x - max))`` along `axis`."""
    if isinstance(x, np.ndarray):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
    import torch

    return torch.softmax(x, dim=axis)


def layer_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    """Layer norm over the last axis: ``(x - mean) / sqrt(var + eps) * weight + bias`` (biased variance)."""
    if isinstance(x, np.ndarray):
        mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * weight + bias
    import torch

    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps=eps)


def relu(x: Any) -> Any:
    """``max(x, 0)`` elementwise."""
    if isinstance(x, np.ndarray):
        return np.maximum(x, 0.0)
    import torch

    return torch.relu(x)


def conv2d_nhwc(x: Any, w: Any, kernel: tuple[int, int], padding: int) -> Any:
    """The convolution of stride 1 of channels-last `x` (N, H, W, C) with `w` (taps, C, F) (tap kh * KW + kw) of
    window `kernel` and zero `padding` on every side, channels last (N, OH, OW, F): on numpy arrays the sum of the
    taps' products, on torch tensors PyTorch's convolution of the channels-last memory (cuDNN on a GPU), in the
    inputs' precision."""
    kh_, kw_ = kernel
    if isinstance(x, np.ndarray):
        n, h, wd, _ = x.shape
        oh, ow = h + 2 * padding - kh_ + 1, wd + 2 * padding - kw_ + 1
        padded = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
        taps = [(kh, kw) for kh in range(kh_) for kw in range(kw_)]
        return sum(padded[:, kh : kh + oh, kw : kw + ow, :] @ w[kh * kw_ + kw] for kh, kw in taps)
    import torch

    weight = w.reshape(kh_, kw_, w.shape[1], w.shape[2]).permute(3, 2, 0, 1)  # (F, C, KH, KW)
    weight = weight.contiguous(memory_format=torch.channels_last)
    out = torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), weight, padding=padding)  # NCHW view of channels last
    return out.permute(0, 2, 3, 1)


def transpose(x: Any) -> Any:
    """`x` with its last two axes swapped (a batch of matrices, each transposed)."""
    if isinstance(x, np.ndarray):
        return np.swapaxes(x, -1, -2)
    return x.transpose(-1, -2)


def attention(
    q: Any, k: Any, v: Any, *, causal: bool = False, scale: float | None = None, window: int = 0
) -> tuple[Any, Any]:
    """(O, LSE) of ``softmax(q kᵀ · scale) v`` for q (B, H, SQ, D), k (B, HK, SK, D), v (B, HK, SK, DV), H a multiple
    of HK (query head h reads key/value head h // (H / HK)); LSE is each row's log-sum-exp of the scaled scores.
    `scale` defaults to 1/sqrt(D). `causal`: query i sees keys j <= i + SK - SQ (the mask aligned at the bottom right,
    as FlashAttention aligns it); `window` > 0 (causal only): the last `window` of those, j > i + SK - SQ - window
    (a sliding window, as Mistral's and Gemma's local layers). A row that sees no key gets O = 0 and LSE = -inf."""
    group = q.shape[1] // k.shape[1]
    sq, sk = q.shape[2], k.shape[2]
    scale = scale if scale is not None else 1.0 / float(q.shape[-1]) ** 0.5
    if window and not causal:
        raise ValueError(f"window = {window}: a sliding window is the last keys up to the causal diagonal")
    if isinstance(q, np.ndarray):
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        s = q @ np.swapaxes(k, -1, -2) * scale
        if causal:
            lag = np.arange(sq)[:, None] + sk - sq - np.arange(sk)[None, :]  # the key's distance behind the diagonal
            s = np.where((lag >= 0) & ((lag < window) if window else True), s, -np.inf)
        top = s.max(axis=-1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(s - top)
        total = e.sum(axis=-1, keepdims=True)
        seen = total > 0
        o = np.where(seen, (e @ v) / np.where(seen, total, 1.0), 0.0)
        lse = np.where(seen[..., 0], np.log(np.where(seen, total, 1.0))[..., 0] + top[..., 0], -np.inf)
        return o, lse
    import torch

    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        lag = torch.arange(sq, device=q.device)[:, None] + sk - sq - torch.arange(sk, device=q.device)[None, :]
        keep = (lag >= 0) & (lag < window) if window else lag >= 0
        s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None].clamp(min=torch.finfo(s.dtype).min))
    return torch.nan_to_num(p) @ v, lse
