"""argus: verified, agent-driven GPU kernel optimization for NVIDIA Hopper.

The root re-exports the version and the kernel decorator (``@argus.kernel``); the DSL is
``import argus.lang as T``. The packages, bottom layer first (docs/architecture.md): `layout` (the CuTe
layout algebra) and `diagnostics` (the error shape and the catalog of every code), `ir`, `atoms`, `lang`
(the tile DSL), `verify` | `interp` | `backend` (proofs, the CPU interpreter, CUDA code generation),
`runtime`, `kernels`, `tasks`, `eval` | `kb` (the gate; the knowledge base), `lineage`, `agent`, and the
`argus` command (`cli`).
"""

from argus._version import __version__
from argus.lang.decorator import kernel

__all__ = ["__version__", "kernel"]
