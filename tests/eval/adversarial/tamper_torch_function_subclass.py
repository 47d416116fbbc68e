# attack: tamper: a Tensor subclass whose __torch_function__ makes every comparison pass
# expect: rejected CORRECT_OUTPUT_TYPE
import torch
from torch import nn


class Liar(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        out = super().__torch_function__(func, types, args, kwargs or {})
        if func in (torch.Tensor.sub, torch.sub, torch.Tensor.__sub__, torch.abs, torch.Tensor.abs):
            return torch.zeros_like(torch.Tensor(out)) if isinstance(out, torch.Tensor) else out
        return out


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1]).as_subclass(Liar)
