# attack: tamper: sends a frame whose header claims a tensor far larger than any output
# expect: rejected SANDBOX_PROTOCOL|SANDBOX_CRASHED
import json
import struct

import torch
from torch import nn

import argus.eval.sandbox_runner as runner


def forged(sock, message):
    body = {"outputs": [{"__tensor__": 0, "dtype": "float32", "shape": [1 << 40]}]}
    header = json.dumps({"body": body, "sizes": [4 << 40]}).encode()
    sock.sendall(struct.pack("<Q", len(header)) + header)


runner.send_frame = forged


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.zeros(a.shape[0], b.shape[1])
