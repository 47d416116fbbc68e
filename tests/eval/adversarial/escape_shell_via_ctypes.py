# attack: escape: calls libc's system() through ctypes to write a marker and open a shell
# expect: accepted
import ctypes

import torch
from torch import nn

ctypes.CDLL(None).system(b"touch @MARKER@ 2>/dev/null")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
