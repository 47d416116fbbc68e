# attack: tamper: returns a tensor on the meta device (no data: a naive comparison errors out)
# expect: rejected CORRECT_OUTPUT_DEVICE
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.empty(a.shape[0], b.shape[1], device="meta")
