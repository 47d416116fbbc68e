"""Kernel-family templates, one module per family, each a `Template` (`families.base`): the function the
partitioner asks whether a node fits, and the writer of the group's DSL kernel.

`TEMPLATES` maps each family that has a template to it; a family without one is reported as not covered
(`argus.frontend.partition.NOT_BUILT`). Pointwise fuses connected nodes into one kernel; the other families take
one node per kernel until their prologue/epilogue fusion is built.
"""

from __future__ import annotations

from argus.frontend.families import normalization, pointwise
from argus.frontend.families.base import KernelSource, Template
from argus.frontend.partition import Family

TEMPLATES: dict[Family, Template] = {
    Family.POINTWISE: Template(pointwise.unsupported, pointwise.kernel_source, fuses=True),
    Family.NORMALIZATION: Template(normalization.unsupported, normalization.kernel_source),
}

__all__ = ["TEMPLATES", "KernelSource", "Template"]
