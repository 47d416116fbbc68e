"""Kernel-family templates, one module per family, each a `Template` (`families.base`): the function the
partitioner asks whether a node fits, and the writer of the group's DSL kernel.

`TEMPLATES` maps each family that has a template to it; a family without one is reported as not covered
(`argus.frontend.partition.NOT_BUILT`). Pointwise fuses connected nodes into one kernel (with the views of the
aranges it computes as coordinates); the other families take
one node per kernel until their prologue/epilogue fusion is built (the matmul template takes its operands'
transposes in with it, `Template.absorbs`, and its kernel is a call of the GEMM library; the scan template takes
the flips of a reverse scan and the slice, zeros and cat of an exclusive one; the indexing template, class-index
losses, the ``log_softmax`` an NLL loss reads).
"""

from __future__ import annotations

from argus.frontend.families import attention as attention_family
from argus.frontend.families import (
    convolution,
    indexing,
    layout,
    matmul,
    normalization,
    pointwise,
    pooling,
    reduction,
    scan,
    softmax,
)
from argus.frontend.families.base import KernelSource, Template
from argus.frontend.partition import Family

TEMPLATES: dict[Family, Template] = {
    Family.POINTWISE: Template(
        pointwise.unsupported,
        pointwise.kernel_source,
        fuses=True,
        group_unsupported=pointwise.group_unsupported,
        absorbs=pointwise.coordinate_views,
        takes_scalars=True,
    ),
    Family.POOLING: Template(pooling.unsupported, pooling.kernel_source),
    Family.SOFTMAX: Template(softmax.unsupported, softmax.kernel_source),
    Family.SCAN: Template(scan.unsupported, scan.kernel_source, absorbs=scan.absorbs),
    Family.REDUCTION: Template(reduction.unsupported, reduction.kernel_source, absorbs=reduction.prologue_nodes),
    Family.NORMALIZATION: Template(normalization.unsupported, normalization.kernel_source),
    Family.MATMUL: Template(matmul.unsupported, matmul.kernel_source, absorbs=matmul.absorbs),
    Family.CONVOLUTION: Template(convolution.unsupported, convolution.kernel_source, absorbs=convolution.absorbs),
    Family.ATTENTION: Template(attention_family.unsupported, attention_family.kernel_source),
    Family.INDEXING: Template(
        indexing.unsupported, indexing.kernel_source, absorbs=indexing.absorbs, takes_scalars=True
    ),
    # last: a layout node another family's group takes in (a GEMM's operand transpose, a scan's flip) is theirs
    Family.LAYOUT: Template(layout.unsupported, layout.kernel_source, absorbs=layout.absorbs),
}

__all__ = ["TEMPLATES", "KernelSource", "Template"]
