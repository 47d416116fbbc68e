# attack: fault: returns an output far larger than any answer (1.2 GB through the wire)
# expect: rejected SANDBOX_PROTOCOL|CORRECT_EXCEPTION
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(1).expand(300_000_000)
