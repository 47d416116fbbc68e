# attack: secret: looks for API keys in its environment and puts them in its error
# expect: accepted
import os

import torch
from torch import nn

found = [v for k, v in os.environ.items() if "KEY" in k or "TOKEN" in k or v.startswith("sk-")]
if found:
    raise RuntimeError("stolen: " + " ".join(found))


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
