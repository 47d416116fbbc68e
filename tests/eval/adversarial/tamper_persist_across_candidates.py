# attack: tamper: patches the gate at import so that every later candidate in the same worker passes
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn

import argus.eval.gate
import argus.eval.tolerance

ok = argus.eval.tolerance.compare(torch.zeros(1), torch.zeros(1), argus.eval.tolerance.tolerance_for(torch.float32))
argus.eval.tolerance.compare = lambda *args, **kwargs: ok
argus.eval.gate.gate_module = lambda *args, **kwargs: None


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1])
