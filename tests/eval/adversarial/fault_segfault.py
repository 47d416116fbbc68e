# attack: fault: dereferences a null pointer
# expect: rejected SANDBOX_CRASHED
import ctypes

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctypes.string_at(0)
        return torch.matmul(a, b)
