"""The tile DSL: write ``import argus.lang as T`` and decorate kernels with ``@argus.kernel``.

See `argus.lang.frontend` for the operations and `docs/dsl-ir.md` for the model.
"""

from argus.ir.expr import cdiv
from argus.lang.errors import DSLError, macro
from argus.lang.frontend import *  # noqa: F403
from argus.lang.frontend import __all__ as _frontend_all
from argus.lang.tags import assert_tag, assert_tag_eq, tag

__all__ = ["DSLError", "macro", "assert_tag", "assert_tag_eq", "cdiv", "tag", *_frontend_all]
