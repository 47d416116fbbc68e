"""The indexing/gather family: losses over class indices (cross-entropy and the negative log-likelihood), whose
per-row gather ``logp[r, target[r]]`` is computed while the row streams by, so no thread reads an address that
data decides.

Capture rewrites ``aten.cross_entropy_loss`` and ``aten.nll_loss_nd`` of a ``(B, C)`` float input and ``(B,)``
int64 class indices (`argus.frontend.decompositions.class_loss`) into ``argus::class_loss_rows`` — the per-row
loss and the per-row weight that the mean divides by — followed by ``sum`` and ``div`` (the reduction and
pointwise families' kernels; ``reduction="none"`` returns the rows' losses). This template writes the rows
operator as one DSL kernel with the softmax family's row layout (`softmax.ROWS_TILE`: ``BM`` rows of a block,
``BN``-column tiles, a row held by one warp, 16-byte loads along it; a tile of up to 512 columns with four loads in
flight a thread was measured no faster on 32768 x 4096 float32 and slower in bfloat16, see
`benchmarks/results/2026-11-30-solve-gather/`):

* a row's target is read once into a per-row fragment (an int64 class index converted to float32: exact below
  ``2**24`` classes, `MAX_CLASSES`);
* every tile adds ``x[r, c]`` where ``c == target[r]`` to the row's *picked* value (and ``weight[c]`` to its
  picked weight): a select on the column coordinate (``T.index``), with the columns past ``C`` masked by a
  condition on the coordinate alone, so the verifier proves the padding never enters a sum;
* from logits (cross-entropy, or an NLL whose input is a ``log_softmax`` of the row this group absorbs), the same
  pass keeps the online maximum (one row reduction a tile) and the rescaled sum of ``exp`` — per element, reduced
  across the row once after the loop, not once a tile — so ``-log_softmax(x)[t] = lse - x[t]`` costs one read of
  ``x`` and no ``(B, C)`` intermediate;
* label smoothing adds ``-sum_c w_c log p_c = lse * sum_c w_c - sum_c w_c x_c`` (two more row sums in the pass).

An ``ignore_index`` or ``label_smoothing`` the forward receives as an argument (bound by the capture) is a kernel
parameter, ``IGNORE`` / ``EPS``, passed at each call. A row whose target is ``ignore_index`` has loss and weight 0.
Per row, ``loss = valid * ((1 - eps) * w_t * (lse - x_t) + eps / C * (lse * sum(w) - sum(w * x)))`` and ``weight =
valid * w_t``: PyTorch's mean divides both terms by the sum of the weights of the rows that count (by their count
without a weight), so ``mean = sum(loss) / sum(weight)``. All arithmetic is float32; the losses are float32 (the
``sum`` and ``div`` after them round to the input's dtype). Targets outside ``[0, C)`` pick nothing (PyTorch stops
with a device assertion): a loss of ``lse``.

Not taken (left to the core ATen decompositions, reported as not covered with the reason): probability targets,
inputs of another rank than 2 (the K-dimensional loss), class counts of ``2**24`` or more, a ``log_softmax`` over
another dimension. Row gathers (``embedding``, ``index_select``, ``x[..., idx, ...]``) are `families.gather`'s;
other indexing operators (``gather``, ``scatter``, ``index_put``) have no template yet.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argus.frontend.families import gather
from argus.frontend.families.base import DTYPES, KernelSource, dtype_name, node_value, safe_name
from argus.frontend.families.softmax import LOG2E, ROWS_TILE

#: The operator this template writes (registered by `argus.frontend.decompositions`).
OPERATOR = "class_loss_rows"
#: Class indices are compared as float32 column coordinates: exact below 2**24.
MAX_CLASSES = 1 << 24


def _op(node: Any) -> str:
    from argus.frontend.partition import op_name

    return op_name(node) if node.op == "call_function" else ""


def rows_unsupported(x: Any, target: Any, weight: Any) -> str | None:
    """None when a class-index loss of input `x`, class indices `target` and optional `weight` (fake tensors) is one
    this template computes, else why not; capture rewrites only the losses this accepts."""
    import torch

    if not isinstance(x, torch.Tensor) or not isinstance(target, torch.Tensor):
        return "its input or target is not a tensor"
    if x.dim() != 2:
        return f"a {x.dim()}-d input (the template takes (batch, classes))"
    if dtype_name(x) not in DTYPES:
        return f"input dtype {x.dtype} (the template takes float32, float16, bfloat16)"
    if target.dtype != torch.int64 or tuple(target.shape) != (x.shape[0],):
        return f"target {target.dtype} {tuple(target.shape)} (the template takes int64 class indices, one per row)"
    if x.shape[1] >= MAX_CLASSES:
        return f"{x.shape[1]} classes (class indices are compared as float32: at most {MAX_CLASSES - 1})"
    if x.numel() == 0:
        return "an empty input"
    if weight is not None and (
        not isinstance(weight, torch.Tensor) or tuple(weight.shape) != (x.shape[1],) or dtype_name(weight) not in DTYPES
    ):
        return "a class weight that is not a float vector of one value per class"
    return None


def unsupported(node: Any) -> str | None:
    """None when the template can take `node` (see the module docstring; row gathers: `families.gather`), else why
    not."""
    if gather.takes(node):
        return gather.unsupported(node)
    if _op(node) != OPERATOR:
        return (
            f"{node.target}: no indexing/gather template yet (class-index losses, and row gathers: embedding, "
            "index_select, x[..., idx, ...])"
        )
    x, target, weight = (node_value(a) if a is not None else None for a in node.args[:3])
    return rows_unsupported(x, target, weight)


def absorbs(node: Any, bound: frozenset[str] = frozenset()) -> list[Any]:
    """The ``_log_softmax`` over the class dimension that an NLL loss reads when nothing else reads it: the group
    takes it in, and the kernel computes from the logits in one pass."""
    import torch

    if _op(node) != OPERATOR or node.args[5]:
        return []
    src = node.args[0]
    if not isinstance(src, torch.fx.Node) or _op(src) != "_log_softmax" or src.name in bound:
        return []
    if len(src.users) != 1 or src.args[1] % 2 != 1 or src.args[2]:  # dim 1 of 2 (or -1), no half_to_float
        return []
    logits = node_value(src.args[0])
    if not isinstance(logits, torch.Tensor) or dtype_name(logits) != dtype_name(node_value(src)):
        return []
    return [src]


def kernel_source(
    name: str, subgraph: Any, scalar_uses: Mapping[tuple[str, int], str], scalar_values: Mapping[str, Any]
) -> KernelSource:
    """The rows kernel of a class-index loss group (the rows operator, its ``getitem``s, an absorbed
    ``_log_softmax``), or a row gather's (`families.gather`)."""
    nodes = list(subgraph.graph.nodes)
    if any(gather.takes(n) for n in nodes):
        return gather.kernel_source(name, subgraph)
    node = next(n for n in nodes if _op(n) == OPERATOR)
    x_node, target_node, weight_node, ignore, eps, logits = node.args
    if _op(x_node) == "_log_softmax":  # absorbed: the kernel reads the logits
        x_node, logits = x_node.args[0], True
    x = node_value(x_node)
    batch, classes = (int(d) for d in x.shape)
    picked: dict[int, Any] = {}
    for n in nodes:
        if _op(n) == "getitem" and n.args[0] is node:
            picked[int(n.args[1])] = n
    results = [picked[i] for i in sorted(picked)]
    taken: set[str] = set()
    params = {"X": safe_name("X", taken), "TGT": safe_name("TGT", taken)}
    inputs = [x_node, target_node]
    if weight_node is not None:
        params["W"] = safe_name("W", taken)
        inputs.append(weight_node)
    outs = {0: safe_name("LOSS", taken), 1: safe_name("WT", taken)}
    in_dt = DTYPES[dtype_name(x)]
    w_dt = DTYPES[dtype_name(node_value(weight_node))] if weight_node is not None else None
    # ignore_index and label_smoothing given as forward arguments (`argus.frontend.capture` bound them): kernel
    # parameters the solution passes at each call, the captured values their defaults; a bound smoothing keeps its
    # sums in the kernel whatever the captured value
    bound = {"IGNORE": scalar_uses.get((node.name, 3)), "EPS": scalar_uses.get((node.name, 4))}
    scalars = {k: v for k, v in bound.items() if v is not None}
    smoothing = float(eps) != 0.0 or "EPS" in scalars
    what = (
        f"{'cross-entropy' if logits else 'negative log-likelihood'} over {classes} classes of {batch} rows"
        f"{', class weights' if weight_node is not None else ''}, ignore_index="
        + ("IGNORE" if "IGNORE" in scalars else str(int(ignore)))
        + (f", label_smoothing={'EPS' if 'EPS' in scalars else repr(float(eps))}" if smoothing else "")
    )
    values = {"IGNORE": float(int(ignore)), "EPS": float(eps)}
    extra = [f"{k}: float = {values[k]!r}" for k in scalars]
    kernel = _kernel_text(name, params, outs, sorted(picked), in_dt, w_dt, batch, classes,
                          "IGNORE" if "IGNORE" in scalars else repr(float(int(ignore))),
                          "EPS" if "EPS" in scalars else (float(eps) if smoothing else None), bool(logits), what,
                          extra)  # fmt: skip
    reference = _reference_text(name, [params[k] for k in params], sorted(picked), int(ignore), float(eps),
                                bool(logits), weight_node is not None, classes, what)  # fmt: skip
    dtypes = {x_node.name: in_dt, target_node.name: "i64", **{r.name: "f32" for r in results}}
    if weight_node is not None:
        dtypes[weight_node.name] = w_dt
    return KernelSource(
        name,
        reference,
        kernel,
        [n.name for n in inputs],
        [r.name for r in results],
        scalars,
        batch,
        dtypes,
        {x_node.name: (batch, classes), target_node.name: (batch,), **{r.name: (batch,) for r in results}},
        indices={target_node.name: (0, classes, (int(ignore),))},
    )


def _kernel_text(
    name: str,
    params: dict[str, str],
    outs: dict[int, str],
    written: list[int],
    in_dt: str,
    w_dt: str | None,
    batch: int,
    classes: int,
    ignore: str,
    eps: float | str | None,
    logits: bool,
    what: str,
    extra: list[str],
) -> str:
    """The rows kernel's text. `ignore`: the ignore_index as kernel text (a literal, or a parameter's name); `eps`:
    label smoothing — None for none, a literal, or a parameter's name (then the smoothing sums are always there);
    `extra`: the kernel's scalar parameters."""
    bm, bn = ROWS_TILE
    x, tgt = params["X"], params["TGT"]
    w = params.get("W")
    args = [f'    {x}: T.Tensor[("M", "N"), T.{in_dt}],', f'    {tgt}: T.Tensor[("M",), T.i64],']
    if w is not None:
        args.append(f'    {w}: T.Tensor[("N",), T.{w_dt}],')
    args += [f'    {outs[i]}: T.Tensor[("M",), T.f32],' for i in written]
    smooth_on = eps is not None
    sums = ["px"] + (["pw"] if w is not None else []) + (["sx"] if smooth_on else [])
    sums += ["sw"] if smooth_on and w else []
    lines = [
        f'@argus.kernel(reference={name}_reference, sizes={{"M": {batch}, "N": {classes}}}, '
        'policies={"tile_shape": ("BM", "BN")})',
        f"def {name}(",
        *args,
        f"    BM: int = {bm},",
        f"    BN: int = {bn},",
        *[f"    {p}," for p in extra],
        "):",
        f'    """{what}: the per-row loss and weight; BM rows per block, each row streamed once in BN-column tiles',
        "    (a row held by one warp), its target picked by a select on the column coordinate; the sum of exp kept",
        '    per element and reduced across the row once, after the loop (the maximum and the picks: once a tile)."""',
        "    with T.grid(T.cdiv(M, BM), threads=128) as (bm,):",
        "        x = T.alloc_fragment((BM, BN), T.f32)  # (BM, BN), 16-byte vectors along the row",
        "        t = T.alloc_reduced(x, axis=1)  # each row's class index (exact in float32 below 2**24)",
        f"        T.copy({tgt}.tile(bm, BM), t)",
    ]
    if w is not None:
        lines.append("        w = T.alloc_reduced(x, axis=0)  # the class weights of a tile's columns")
    for acc, words in (
        ("px", "x at the row's target"),
        ("pw", "the weight of the row's target"),
        ("sx", "the row's (weighted) sum of x"),
        ("sw", "the sum of the class weights"),
    ):
        if acc in sums:
            lines += [
                f"        {acc} = T.alloc_reduced(x, axis=1)  # {words}",
                f"        T.fill({acc}, 0.0)",
            ]
    if logits:
        lines += [
            "        m = T.alloc_reduced(x, axis=1)  # running maximum of each row",
            "        l_e = T.alloc_fragment((BM, BN), T.f32)  # running sum of exp(x - m), per element (x's layout)",
            '        T.fill(m, float("-inf"))',
            "        T.fill(l_e, 0.0)",
        ]
    lines += [
        "        for j in T.serial(T.cdiv(N, BN)):",
        f'            T.copy({x}.tile((bm, j), (BM, BN)), x, pad=float("-inf"))  # no padding wins the maximum',
    ]
    if w is not None:
        lines.append(f"            T.copy({w}.tile(j, BN), w)")
    lines += [
        "            col = T.index(x, 1) + j * BN",
        "            hit = T.eq(col, t[:, None])",
        "            # each select's outer condition is the coordinate alone: no padded column enters a sum",
        "            T.copy(px + T.reduce_sum(T.where(col < N, T.where(hit, x, 0.0), 0.0), axis=1), px)",
    ]
    if w is not None:
        lines.append(
            "            T.copy(pw + T.reduce_sum(T.where(col < N, T.where(hit, w[None, :], 0.0), 0.0), axis=1), pw)"
        )
    if smooth_on:
        wx = "x * w[None, :]" if w is not None else "x"
        lines.append(f"            T.copy(sx + T.reduce_sum(T.where(col < N, {wx}, 0.0), axis=1), sx)")
        if w is not None:
            lines.append("            T.copy(sw + T.reduce_sum(T.where(col < N, w[None, :], 0.0), axis=1), sw)")
    if logits:
        lines += [
            "            m_new = T.maximum(T.reduce_max(x, axis=1), m)  # the row's maximum: one reduction a tile",
            f"            p = T.where(col < N, T.exp2((x - m_new[:, None]) * {LOG2E!r}), 0.0)",
            "            # what was summed under the old maximum is rescaled to the new one (a factor per row)",
            f"            T.copy(l_e * T.exp2((m - m_new) * {LOG2E!r})[:, None] + p, l_e)",
            "            T.copy(m_new, m)",
        ]
    if logits:
        lines += [
            "        l = T.reduce_sum(l_e, axis=1)  # once, after the loop: warp shuffles across the row's threads",
            "        lg = T.log(l)  # log(sum(exp(x - m))) of each row: lse = m + lg",
        ]
    lines.append(f"        valid = T.ne(t, {ignore})  # 1 where the row counts, 0 at ignore_index")
    weight = "pw * valid" if w is not None else "valid"
    # (m - x_t) + lg, not (m + lg) - x_t: with large logits m + lg rounds lg to m's grid (as log_softmax did)
    nll = "((m - px) + lg)" if logits else "(0.0 - px)"
    loss = f"{weight} * {nll}"
    if smooth_on:
        total_w = "sw" if w is not None else float(classes)
        smooth = f"((m * {total_w} - sx) + lg * {total_w})" if logits else "(0.0 - sx)"
        if isinstance(eps, str):  # a parameter: a Python float when the kernel is traced
            loss = f"(1.0 - {eps}) * {loss} + ({eps} / {classes}) * valid * {smooth}"
        else:
            loss = f"{1.0 - eps!r} * {loss} + {eps / classes!r} * valid * {smooth}"
    if 0 in written:
        lines.append(f"        T.copy({loss}, {outs[0]}.tile(bm, BM))")
    if 1 in written:
        lines.append(f"        T.copy({weight}, {outs[1]}.tile(bm, BM))")
    return "\n".join(lines) + "\n"


def _reference_text(
    name: str,
    params: list[str],
    written: list[int],
    ignore: int,
    eps: float,
    logits: bool,
    weighted: bool,
    classes: int,
    what: str,
) -> str:
    """The rows operator in PyTorch, as `argus.frontend.decompositions.class_loss_rows` computes it."""
    w = params[2] if weighted else "None"
    results = ", ".join(["loss", "weight"][i] for i in written)  # one result alone is a tensor, not a tuple
    return (
        "\n".join(
            [
                f"def {name}_reference({', '.join(params)}):",
                f'    """{what}: (loss, weight) per row."""',
                "    from argus.frontend.decompositions import class_loss_reference",
                "",
                f"    loss, weight = class_loss_reference({params[0]}, {params[1]}, {w}, {ignore}, {eps!r}, {logits})",
                f"    return {results}",
            ]
        )
        + "\n"
    )
