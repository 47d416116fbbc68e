# attack: escape: appends to argus's own source on disk, to poison the next judge that imports it
# expect: accepted
import importlib.util

import torch
from torch import nn

spec = importlib.util.find_spec("argus.eval.tolerance")
try:
    with open(spec.origin, "a") as f:
        f.write("\ncompare = lambda *a, **k: None\n")
except OSError:
    pass


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
