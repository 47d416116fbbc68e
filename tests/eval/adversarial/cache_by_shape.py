# attack: cache: computes once per shape and returns the stored answer afterwards
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn

CACHE: dict = {}


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (tuple(a.shape), tuple(b.shape))
        if key not in CACHE:
            CACHE[key] = torch.matmul(a, b)
        return CACHE[key].clone()
