# attack: tamper: finds the reference Model through sys.modules and patches its forward
# expect: rejected CORRECT_MISMATCH
import sys

import torch
from torch import nn


def _patch() -> None:
    for module in list(sys.modules.values()):
        cls = getattr(module, "Model", None)
        if isinstance(cls, type) and issubclass(cls, nn.Module):
            cls.forward = lambda self, x, y: torch.zeros(x.shape[0], y.shape[1], dtype=x.dtype)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        _patch()
        return torch.zeros(a.shape[0], b.shape[1])
