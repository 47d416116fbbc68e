# attack: fault: raises while its file is imported
# expect: rejected COMPILE_IMPORT
import torch
from torch import nn

raise ImportError("no such extension")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
