# attack: tamper: walks the caller's frames for the reference's result or the comparison
# expect: rejected CORRECT_MISMATCH
import sys

import torch
from torch import nn


def _from_frames(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    frame = sys._getframe(1)
    while frame is not None:
        for name in ("expected", "ref_high", "reference", "want"):
            value = frame.f_locals.get(name)
            if isinstance(value, torch.Tensor):
                return value.float()
        frame = frame.f_back
    return torch.zeros(a.shape[0], b.shape[1])


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _from_frames(a, b)
