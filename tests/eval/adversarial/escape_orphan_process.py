# attack: escape: starts a process in a new session that would outlive a killed worker
# expect: accepted
import subprocess

import torch
from torch import nn

subprocess.Popen(["sleep", "@SLEEP@"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
