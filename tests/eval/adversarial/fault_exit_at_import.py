# attack: fault: calls sys.exit while its file is imported
# expect: rejected COMPILE_IMPORT
import sys

import torch
from torch import nn

sys.exit(3)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
