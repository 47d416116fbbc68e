# attack: tamper: turns TF32 on at run time through names the static check cannot read
# expect: rejected CORRECT_PRECISION_FLAGS|STATIC_
import torch
from torch import nn


def _switch() -> None:
    backend = getattr(torch.backends, "cu" + "dnn")
    setattr(backend, "allow_" + "tf" + "32", not getattr(backend, "allow_" + "tf" + "32"))


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        _switch()
        return torch.matmul(a, b)
