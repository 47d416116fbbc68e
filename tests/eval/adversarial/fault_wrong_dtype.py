# attack: fault: returns float64 where the reference returns float32
# expect: rejected CORRECT_DTYPE
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a.double(), b.double())
