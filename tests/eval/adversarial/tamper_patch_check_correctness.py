# attack: tamper: replaces check_correctness and the gate's stages with ones that pass
# expect: rejected CORRECT_MISMATCH
import torch
from torch import nn

import argus.eval.correctness
import argus.eval.gate
from argus.eval.results import StageResult, Status


def passed(*args, **kwargs):
    return StageResult("correct", Status.PASSED, None, "all good")


argus.eval.correctness.check_correctness = passed
argus.eval.gate.check_correctness = passed


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1])
