# attack: honest: a correct, non-contiguous output (a transposed product)
# expect: accepted
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(b.t(), a.t()).t()
