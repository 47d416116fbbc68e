# attack: fault: never returns from forward
# expect: rejected SANDBOX_TIMEOUT
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        while True:
            pass
