# attack: tamper: replaces torch.matmul with zeros so that the reference agrees with a wrong answer
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn

torch.matmul = lambda x, y: torch.zeros(x.shape[0], y.shape[1], dtype=x.dtype)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
