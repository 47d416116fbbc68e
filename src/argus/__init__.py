"""argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper.

What exists today: the CuTe layout algebra (`argus.layout`) and the `argus` command. The tile
DSL, the verifier, the backend, the gate and the agent are built by later issues.
"""

from argus._version import __version__
from argus.lang.decorator import kernel

__all__ = ["__version__", "kernel"]
