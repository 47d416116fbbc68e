"""The tile DSL: write ``import argus.lang as T`` and decorate kernels with ``@argus.kernel``.

See `argus.lang.frontend` for the operations and `docs/dsl-ir.md` for the model.
"""

from argus.ir.expr import cdiv
from argus.lang.errors import DSLError
from argus.lang.frontend import *  # noqa: F403
from argus.lang.frontend import __all__ as _frontend_all

__all__ = ["DSLError", "cdiv", *_frontend_all]
