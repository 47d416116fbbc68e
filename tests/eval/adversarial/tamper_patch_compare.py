# attack: tamper: patches the gate's comparison functions to always agree
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn

import argus.eval.correctness
import argus.eval.tolerance

ok = argus.eval.tolerance.compare(torch.zeros(1), torch.zeros(1), argus.eval.tolerance.tolerance_for(torch.float32))
argus.eval.tolerance.compare = lambda *args, **kwargs: ok
argus.eval.correctness.compare = lambda *args, **kwargs: ok


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1])
