# attack: tamper: writes into its inputs (the reference would then see different inputs in a shared process)
# expect: rejected CORRECT_INPUT_MODIFIED
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.matmul(a, b)
        a.zero_()
        return out
