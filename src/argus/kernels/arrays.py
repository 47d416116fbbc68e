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


def transpose(x: Any) -> Any:
    """`x` with its last two axes swapped (a batch of matrices, each transposed)."""
    if isinstance(x, np.ndarray):
        return np.swapaxes(x, -1, -2)
    return x.transpose(-1, -2)
