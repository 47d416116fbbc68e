# attack: fault: ends its process with os._exit in forward
# expect: rejected SANDBOX_CRASHED
import os

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        os._exit(0)
