# attack: cache: computes honestly for the first calls (the correctness trials), then returns its last answer
# expect: accepted
import torch
from torch import nn

STATE: dict = {"calls": 0, "last": None}


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        STATE["calls"] += 1
        if STATE["calls"] <= 8 or STATE["last"] is None:
            STATE["last"] = torch.matmul(a, b)
        return STATE["last"].clone()
