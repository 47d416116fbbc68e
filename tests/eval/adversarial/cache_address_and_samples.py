# attack: cache: keyed on the buffer address and a few sampled elements (~1/500 of the work when timed on fixed draws)
# expect: accepted
import torch
from torch import nn

CACHE: dict = {}


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (a.data_ptr(), b.data_ptr(), float(a.view(-1)[0]), float(a.view(-1)[-1]), float(b.view(-1)[7]))
        if key not in CACHE:
            CACHE.clear()
            CACHE[key] = torch.matmul(a, b)
        return CACHE[key].clone()
