"""The reference every file of the adversarial corpus attacks: C = A @ B in fp32 (KernelBench's format)."""

import torch
from torch import nn

M, K, N = 24, 40, 16


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs() -> list:
    return []
