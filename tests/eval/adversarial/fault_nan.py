# attack: fault: NaN where the reference is finite
# expect: rejected CORRECT_NONFINITE|CORRECT_MISMATCH
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.matmul(a, b)
        out[0, 0] = float("nan")
        return out
