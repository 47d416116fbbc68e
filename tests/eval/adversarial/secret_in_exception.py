# attack: secret: raises with whatever key variable it can read, so that the reason carries it
# expect: rejected CORRECT_EXCEPTION
import os

import torch
from torch import nn


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("key=" + str(os.environ.get("OPENAI_API_KEY")) + str(os.environ.get("ARGUS_LLM_API_KEY")))
