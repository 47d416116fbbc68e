# attack: fault: raises KeyboardInterrupt in forward
# expect: rejected CORRECT_EXCEPTION
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        raise KeyboardInterrupt
