# attack: fault: raises an exception whose __str__ itself raises
# expect: rejected CORRECT_EXCEPTION
import torch
from torch import nn


class Nasty(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        raise Nasty()
