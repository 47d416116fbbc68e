# attack: fault: a plainly wrong answer
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b) + 1e-2
