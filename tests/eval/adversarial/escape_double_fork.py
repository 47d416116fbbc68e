# attack: escape: a double fork with setsid, the classic daemon that escapes process-group kills
# expect: accepted
import os

import torch
from torch import nn

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "@SLEEP@"])
    os._exit(0)
os.wait()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
