"""The attention family: ``aten.scaled_dot_product_attention`` (which the capture keeps whole) as a call of argus's
attention step (`argus.kernels.attention_step.LibraryAttention`).

As with the matmul and convolution templates, the group's kernel is not one DSL kernel written for the group: it is
the library's plan for the captured call (`argus.kernels.attention_step.attention_plan`): the FlashAttention kernel
(`argus.kernels.sdpa`) for bf16/f16 inputs whose head dims are multiples of 8 up to 256, else the composed plan
(the batched GEMM for S = Q Kᵀ, a streamed row softmax with the scale and the mask folded in, the batched GEMM for
O = P V; f32 at f32 accuracy by the GEMM's split precision). The pipeline verifies every kernel of that plan and
checks the call on the CPU interpreter against the group's FX subgraph.

Taken: q, k, v of rank 4 (B, H, S, D) or rank 3 (N, L, E: one head), one dtype among float32, float16 and bfloat16,
q's batch and head dim in k, k's batch, heads and length in v; ``scale`` (default 1/sqrt(D)); ``is_causal``, which
torch aligns at the top left (query i sees keys j <= i; the FlashAttention kernel aligns at the bottom right, the
same mask only where SQ = SK, so a causal call with SQ != SK runs the composed plan, whose softmax applies torch's
mask); ``enable_gqa`` (H a multiple of HK, query head h on key/value head h // (H / HK)).

Refused (`unsupported`), each with its reason: an ``attn_mask`` (an explicit boolean mask or additive bias is not
built), ``dropout_p > 0`` (a random dropout of the attention weights is not built), key/value heads that differ
from the query heads without ``enable_gqa``, or do not divide them; shapes that torch would broadcast (a batch of 1
against B); other dtypes; and what the plan refuses at the captured sizes (f32 with a contraction longer than the
batched GEMM keeps at f32 accuracy without split-K: D or SK above 4096).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from argus.frontend.families.base import DTYPES, KernelSource, aten_name, dtype_name, node_value, reference_source
from argus.kernels.attention_step import Attention, AttentionStepError, attention_plan
from argus.kernels.matmul import GemmError
from argus.kernels.sdpa import AttentionError

#: aten.scaled_dot_product_attention's arguments after q, k and v, with their defaults (scale and enable_gqa are
#: keyword-only).
SCHEMA = (("attn_mask", None), ("dropout_p", 0.0), ("is_causal", False))


def read_attention(node: Any) -> Attention | str:
    """`node` (an ``aten.scaled_dot_product_attention``) as the library's `Attention`, or why the template cannot
    take it."""
    import torch

    name = aten_name(node)
    if name != "scaled_dot_product_attention":
        return f"{name or node.target}: the attention template takes aten.scaled_dot_product_attention"
    args = list(node.args)
    if len(args) < 3:
        return "scaled_dot_product_attention: fewer than three operands"
    values = {k: (args[i + 3] if i + 3 < len(args) else node.kwargs.get(k, d)) for i, (k, d) in enumerate(SCHEMA)}
    if values["attn_mask"] is not None:
        return "an attn_mask (an explicit boolean mask or additive bias) is not built: only is_causal masks"
    dropout = values["dropout_p"]
    if not isinstance(dropout, int | float) or dropout != 0:
        return f"dropout_p = {dropout!r}: attention with dropout (random attention weights) is not built"
    causal = values["is_causal"]
    scale = node.kwargs.get("scale")
    gqa = node.kwargs.get("enable_gqa", False)
    if not isinstance(causal, bool) or not isinstance(gqa, bool):
        return f"is_causal {causal!r} / enable_gqa {gqa!r} are not booleans"
    if scale is not None and not isinstance(scale, int | float):
        return f"scale {scale!r} is not a number"
    q, k, v, out = (node_value(x) for x in (*args[:3], node))
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v, out)):
        return "scaled_dot_product_attention: the capture recorded no tensor for an operand"
    ranks = {q.dim(), k.dim(), v.dim()}
    if ranks not in ({3}, {4}):
        return f"q, k, v of ranks {q.dim()}, {k.dim()}, {v.dim()} (the template takes rank 4 (B, H, S, D) or rank 3)"
    dtypes = {dtype_name(t) for t in (q, k, v, out)}
    if len(dtypes) != 1 or next(iter(dtypes)) not in DTYPES:
        return f"operands in {', '.join(sorted(dtypes))} (the template takes one dtype: float32, float16 or bfloat16)"
    if 0 in (*q.shape, *k.shape, *v.shape):
        return "an empty operand"
    q4, k4, v4 = (
        tuple(int(d) for d in (t.shape if t.dim() == 4 else (t.shape[0], 1, *t.shape[1:]))) for t in (q, k, v)
    )
    b, h, sq, d = q4
    bk, hk, sk, dk = k4
    if bk != b or k4[:3] != v4[:3] or dk != d:
        return (
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: the template takes k and v with q's batch "
            "and k with q's head dim, one (heads, length) for k and v (torch's broadcasting of a batch is not taken)"
        )
    if hk != h and not gqa:
        return f"{h} query heads over {hk} key/value heads without enable_gqa (torch broadcasts; not taken)"
    if h % hk:
        return f"{h} query heads over {hk} key/value heads: the query heads must be a multiple"
    try:
        attention = Attention(b, h, hk, sq, sk, d, v4[3], causal, float(scale) if scale is not None else None,
                              DTYPES[dtype_name(q)])  # fmt: skip
        attention_plan(attention)
    except (AttentionStepError, AttentionError) as e:
        return f"scaled_dot_product_attention: {e}"
    except GemmError as e:
        return f"the composed plan's batched GEMMs (S = Q Kᵀ over D = {d}, O = P V over SK = {sk}) cannot run: {e}"
    return attention


def unsupported(node: Any) -> str | None:
    """None when the template can take `node`, else why not (see the module docstring)."""
    found = read_attention(node)
    return found if isinstance(found, str) else None


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The library call of an attention group (see the module docstring)."""
    nodes = list(subgraph.graph.nodes)
    placeholders = [n for n in nodes if n.op == "placeholder"]
    (node,) = [n for n in nodes if n.op == "call_function" and aten_name(n) == "scaled_dot_product_attention"]
    attention = read_attention(node)
    assert not isinstance(attention, str)  # unsupported() was asked first
    order = tuple(placeholders.index(o) for o in node.args[:3])
    a = attention
    fields = ", ".join(
        f"{k}={getattr(a, k)!r}"
        for k in ("batch", "heads", "kv_heads", "sq", "sk", "d", "dv", "causal", "scale", "dtype")
    )
    how = attention_plan(a).describe()
    mask = ", causal (top left)" if a.causal else ""
    gqa = f", {a.heads} heads over {a.kv_heads}" if a.kv_heads != a.heads else ""
    q = node_value(node.args[0])
    title = f"scaled_dot_product_attention of q {tuple(q.shape)} ({a.dtype}{mask}{gqa}): {how}"
    ref = reference_source(f"{name}_reference", subgraph, f"The captured FX subgraph of {name} (attention).")
    kernel = "\n".join([f"# {title}", f"{name} = LibraryAttention({name!r}, Attention({fields}), order={order!r})"])
    shapes = {p.name: tuple(int(d) for d in node_value(p).shape) for p in placeholders}
    shapes[node.name] = tuple(int(d) for d in node_value(node).shape)
    return KernelSource(
        name,
        ref,
        "from argus.kernels.attention_step import Attention, LibraryAttention  # noqa: E402\n\n" + kernel + "\n",
        [p.name for p in placeholders],
        [node.name],
        {},
        math.prod(shapes[node.name]),
        {**{p.name: a.dtype for p in placeholders}, node.name: a.dtype},
        shapes,
        library=True,
    )
