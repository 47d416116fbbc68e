# attack: fault: allocates far more memory than the machine has
# expect: rejected CORRECT_EXCEPTION
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        hog = bytearray(1 << 46)
        return torch.matmul(a, b) + len(hog)
