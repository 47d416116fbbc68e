# attack: fault: returns an output far larger than any answer (1.2 GB through the wire; within the reply's 16 GiB
# allowance since a correct 2.6 GB output was refused by the old 1 GiB one, so its shape rejects it)
# expect: rejected SANDBOX_PROTOCOL|CORRECT_EXCEPTION|CORRECT_SHAPE
import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(1).expand(300_000_000)
