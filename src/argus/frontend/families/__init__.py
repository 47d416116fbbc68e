"""Kernel-family templates: for each family that has one, the function the partitioner asks whether a node fits
(`TEMPLATES`: family -> support, None when it fits, else why not) and the template that writes the kernel.

Only the pointwise family is built (`families.pointwise`); reductions, normalizations, softmax, scans, pooling and
the GEMM/convolution templates plug in here through the same interface."""

from __future__ import annotations

from argus.frontend.families import pointwise
from argus.frontend.partition import Family, Support

TEMPLATES: dict[Family, Support] = {Family.POINTWISE: pointwise.unsupported}
