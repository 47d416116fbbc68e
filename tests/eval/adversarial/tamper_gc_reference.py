# attack: tamper: looks for the reference module (or its outputs) with gc.get_objects()
# expect: rejected CORRECT_MISMATCH
import gc

import torch
from torch import nn


def _steal(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    for obj in gc.get_objects():
        if isinstance(obj, nn.Module) and type(obj).__name__ == "Model":
            return obj(a, b)
        if isinstance(obj, torch.Tensor) and obj.shape == (a.shape[0], b.shape[1]) and obj.dtype == torch.float64:
            return obj.float()
    return torch.zeros(a.shape[0], b.shape[1])


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _steal(a, b)
