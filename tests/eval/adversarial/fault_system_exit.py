# attack: fault: raises SystemExit in forward (once a harness error, a milder penalty than a rejection)
# expect: rejected CORRECT_EXCEPTION
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        raise SystemExit(0)
