"""Random small PyTorch modules through `argus solve` on the CPU (the interpreter and the gate): which are solved,
left to PyTorch (with the reason), judged incorrect, or crash. A sweep for the problems no test names.

    PYTHONPATH=src python benchmarks/solve_random_modules.py OUT_DIR --seed 11 --seconds 1200 [--kinds conv ops]

Each module is written as a KernelBench-style problem file under OUT_DIR (with its solution) and one JSON line per
module goes to OUT_DIR/rows.jsonl: the module, the status, the uncovered operators with their reasons, each kernel's
verdict and interpreter check, and the gate's verdict. `incorrect` or `CRASH` rows are the findings to read first;
`not covered` rows say what a family does not take yet."""

# ruff: noqa: E501

from __future__ import annotations

import argparse
import json
import random
import sys
import textwrap
import time
import traceback
from pathlib import Path
from typing import Any


def _shape(rng, rank=None, lo=1, hi=9):
    rank = rank or rng.randint(1, 4)
    return [rng.randint(lo, hi) for _ in range(rank)]


def module_config(rng):
    kind = rng.choice(["norm", "pool", "softmax", "reduce", "matmul", "act", "misc", "pool", "norm", "reduce"])
    dt = rng.choice(["float32", "float32", "bfloat16", "float16"])
    if kind == "norm":
        n, c = rng.randint(1, 4), rng.choice([2, 3, 4, 6, 8])
        sp = _shape(rng, rng.randint(1, 3), 2, 9)
        which = rng.choice(["layer", "group", "batch", "instance", "rms"])
        if which == "layer":
            k = rng.randint(1, len(sp) + 1)
            dims = ([c] + sp)[-k:]
            mod = f"torch.nn.LayerNorm({dims}, elementwise_affine={rng.random() < 0.7}, eps={rng.choice([1e-5, 1e-6, 1e-3])})"
        elif which == "rms":
            mod = f"torch.nn.RMSNorm({[([c] + sp)[-1]]})"
        elif which == "group":
            g = rng.choice([d for d in (1, 2, c) if c % d == 0])
            mod = f"torch.nn.GroupNorm({g}, {c}, affine={rng.random() < 0.7})"
        elif which == "batch":
            mod = f"torch.nn.BatchNorm{max(1, min(3, len(sp)))}d({c})" + (".eval()" if rng.random() < 0.5 else "")
            sp = sp[: max(1, min(3, len(sp)))]
        else:
            sp = sp[: max(1, min(3, len(sp)))]
            mod = f"torch.nn.InstanceNorm{len(sp)}d({c}, affine={rng.random() < 0.5})"
        body, inputs = "self.m(x)", [[n, c] + sp]
    elif kind == "pool":
        r = rng.randint(1, 3)
        sp = _shape(rng, r, 3, 12)
        n, c = rng.randint(1, 3), rng.randint(1, 5)
        which = rng.choice(["max", "avg", "adaptive_avg", "adaptive_max", "lp"])
        k = [rng.randint(1, 4) for _ in range(r)]
        if which == "max":
            mod = f"torch.nn.MaxPool{r}d({k}, stride={[rng.randint(1, 3) for _ in range(r)]}, padding={[rng.randint(0, kk // 2) for kk in k]}, dilation={rng.choice([1, 2])}, ceil_mode={rng.random() < 0.3})"
        elif which == "avg":
            mod = f"torch.nn.AvgPool{r}d({k}, stride={[rng.randint(1, 3) for _ in range(r)]}, padding={[rng.randint(0, kk // 2) for kk in k]}, ceil_mode={rng.random() < 0.3}, count_include_pad={rng.random() < 0.5})"
        elif which == "adaptive_avg":
            mod = f"torch.nn.AdaptiveAvgPool{r}d({[rng.randint(1, s) for s in sp]})"
        elif which == "adaptive_max":
            mod = f"torch.nn.AdaptiveMaxPool{r}d({[rng.randint(1, s) for s in sp]})"
        else:
            r = min(r, 2)
            sp = sp[:r]
            k = k[:r]
            mod = f"torch.nn.LPPool{r}d({rng.choice([1, 2, 3])}, {k[0] if r == 1 else k})"
        body, inputs = "self.m(x)", [[n, c] + sp]
    elif kind == "softmax":
        s = _shape(rng, rng.randint(1, 4), 1, 40)
        d = rng.randint(-len(s), len(s) - 1)
        f = rng.choice(["softmax", "log_softmax"])
        mod, body, inputs = "torch.nn.Identity()", f"torch.{f}(x, dim={d})", [s]
    elif kind == "reduce":
        s = _shape(rng, rng.randint(1, 4), 1, 30)
        d = rng.randint(-len(s), len(s) - 1)
        f = rng.choice(
            [
                "sum",
                "mean",
                "amax",
                "amin",
                "prod",
                "argmax",
                "argmin",
                "var",
                "std",
                "norm",
                "cumsum",
                "cumprod",
                "logsumexp",
            ]
        )
        kd = rng.random() < 0.5
        if f in ("argmax", "argmin"):
            body = f"torch.{f}(x, dim={d}, keepdim={kd}).float()"
        elif f in ("cumsum", "cumprod"):
            body = f"torch.{f}(x, dim={d})"
        elif f in ("var", "std"):
            body = f"torch.{f}(x, dim={d}, keepdim={kd}, correction={rng.choice([0, 1])})"
        elif f == "norm":
            body = f"torch.linalg.vector_norm(x, ord={rng.choice([1, 2, 3])}, dim={d}, keepdim={kd})"
        else:
            body = f"torch.{f}(x, dim={d}, keepdim={kd})" if f != "prod" else f"torch.prod(x, dim={d}, keepdim={kd})"
        mod, inputs = "torch.nn.Identity()", [s]
    elif kind == "matmul":
        which = rng.choice(["linear", "bmm", "einsum", "mm", "baddbmm", "matvec"])
        m, k, n, b = rng.randint(1, 40), rng.randint(1, 40), rng.randint(1, 40), rng.randint(1, 4)
        if which == "linear":
            mod, body, inputs = f"torch.nn.Linear({k}, {n}, bias={rng.random() < 0.7})", "self.m(x)", [[b, m, k]]
        elif which == "bmm":
            mod, body, inputs = "torch.nn.Identity()", "torch.bmm(x, y)", [[b, m, k], [b, k, n]]
        elif which == "einsum":
            mod, body, inputs = "torch.nn.Identity()", "torch.einsum('bik,bjk->bij', x, y)", [[b, m, k], [b, n, k]]
        elif which == "mm":
            mod, body, inputs = "torch.nn.Identity()", "x.t() @ y", [[k, m], [k, n]]
        elif which == "baddbmm":
            mod, body, inputs = (
                "torch.nn.Identity()",
                "torch.baddbmm(z, x, y, beta=0.5, alpha=2.0)",
                [[b, m, k], [b, k, n], [b, m, n]],
            )
        else:
            mod, body, inputs = "torch.nn.Identity()", "x @ y", [[m, k], [k]]
    elif kind == "act":
        s = _shape(rng, rng.randint(1, 4), 1, 20)
        f = rng.choice(
            [
                "torch.nn.functional.gelu(x, approximate='tanh')",
                "torch.nn.functional.silu(x)",
                "torch.nn.functional.mish(x)",
                "torch.nn.functional.elu(x, alpha=0.7)",
                "torch.nn.functional.selu(x)",
                "torch.nn.functional.hardswish(x)",
                "torch.nn.functional.softplus(x, beta=2.0, threshold=5.0)",
                "torch.nn.functional.leaky_relu(x, 0.3)",
                "torch.nn.functional.hardtanh(x, -0.5, 0.7)",
                "torch.clamp(x, min=-0.2)",
                "torch.sigmoid(x) * torch.tanh(x)",
                "torch.nn.functional.softsign(x)",
                "torch.nn.functional.celu(x, 1.3)",
                "torch.erf(x) + torch.expm1(x * 0.1)",
                "torch.where(x > 0, x, x.exp() - 1)",
                "torch.nn.functional.glu(x, dim=-1)" if s[-1] % 2 == 0 else "torch.nn.functional.relu6(x)",
            ]
        )
        mod, body, inputs = "torch.nn.Identity()", f, [s]
    else:
        s = _shape(rng, rng.randint(2, 4), 2, 12)
        f = rng.choice(
            [
                "x.flip(-1) * 2",
                "torch.tril(x) + 1",
                "x.transpose(0, -1).contiguous() * 3",
                "torch.cat([x, x * 2], dim=0)",
                "x[..., ::2] * 1.5",
                "torch.nn.functional.normalize(x, dim=-1)",
                "torch.cumsum(x, dim=-1) / (1 + torch.arange(x.shape[-1]))",
                "torch.nn.functional.pad(x, (1, 2), mode='replicate')" if len(s) in (2, 3) else "x * 2",
                "torch.nn.functional.cosine_similarity(x, x * 0.5 + 1, dim=-1)",
                "torch.nn.functional.mse_loss(x, x * 0.3)",
                "torch.nn.functional.smooth_l1_loss(x, -x)",
                "torch.nn.functional.kl_div(torch.log_softmax(x, -1), torch.softmax(x * 2, -1), reduction='batchmean')",
            ]
        )
        mod, body, inputs = "torch.nn.Identity()", f, [s]
    return dict(kind=kind, mod=mod, body=body, inputs=inputs, dtype=dt)


def conv_config(rng):
    dims = rng.choice([1, 2, 2, 2, 3])
    transposed = rng.random() < 0.35
    groups = rng.choice([1, 1, 1, 2, 3]) if rng.random() < 0.8 else "dw"
    cin_g = rng.choice([1, 2, 3, 4])
    cout_g = rng.choice([1, 2, 3, 5])
    if groups == "dw":
        g = rng.choice([2, 3, 4])
        cin = g
        cout = g * rng.choice([1, 2])
        groups = g
    else:
        g = groups
        cin = cin_g * g
        cout = cout_g * g
    k = tuple(rng.choice([1, 2, 3, 4, 5]) for _ in range(dims))
    stride = tuple(rng.choice([1, 1, 2, 3]) for _ in range(dims))
    dil = tuple(rng.choice([1, 1, 2]) for _ in range(dims))
    size = tuple(rng.randint(3, 9) for _ in range(dims))
    bias = rng.random() < 0.6
    cls = f"torch.nn.ConvTranspose{dims}d" if transposed else f"torch.nn.Conv{dims}d"
    kw = dict(stride=stride, dilation=dil, groups=g, bias=bias)
    if transposed:
        pad = tuple(
            rng.randint(0, d * (kk - 1)) if rng.random() < 0.85 else rng.randint(0, 3)
            for d, kk in zip(dil, k, strict=True)
        )
        outpad = tuple(
            rng.randint(0, max(s, d) - 1) if rng.random() < 0.3 else 0 for s, d in zip(stride, dil, strict=True)
        )
        kw["padding"] = pad
        kw["output_padding"] = outpad
    else:
        mode = rng.choice(["int", "int", "tuple", "same", "valid"])
        if mode == "same" and all(s == 1 for s in stride):
            kw["padding"] = "same"
        elif mode == "valid":
            kw["padding"] = "valid"
        else:
            kw["padding"] = tuple(rng.randint(0, 3) for _ in range(dims))
        if rng.random() < 0.15:
            kw["padding_mode"] = rng.choice(["reflect", "replicate", "circular"])
    # output size must be >= 1
    for i in range(dims):
        p = kw["padding"] if isinstance(kw["padding"], str) else kw["padding"][i]
        if transposed:
            o = (size[i] - 1) * stride[i] - 2 * p + dil[i] * (k[i] - 1) + kw["output_padding"][i] + 1
        else:
            pp = 0 if p == "valid" else (dil[i] * (k[i] - 1)) // 2 if p == "same" else p
            o = (size[i] + 2 * pp - dil[i] * (k[i] - 1) - 1) // stride[i] + 1
        if o < 1:
            return None
    if "padding_mode" in kw and kw["padding_mode"] != "zeros":
        pads = kw["padding"]
        if not isinstance(pads, str) and any(pp >= s for pp, s in zip(pads, size, strict=True)):
            return None
    dtype = rng.choice(["float32", "float32", "bfloat16", "float16"])
    epi = rng.choice(["", "", "", " ; y = torch.relu(y)", " ; y = y * 0.5 + 1.0", " ; y = torch.nn.functional.gelu(y)"])
    n = rng.randint(1, 3)
    return dict(cls=cls, cin=cin, cout=cout, k=k, kw=kw, size=size, n=n, dtype=dtype, epi=epi)


def conv_module(rng: random.Random) -> dict[str, Any] | None:
    """A random convolution module (forward or transposed, 1-d to 3-d, groups, depthwise, stride, padding, dilation,
    output padding, padding modes, a short elementwise tail)."""
    spec = conv_config(rng)
    if spec is None:
        return None
    kw = ", ".join(f"{a}={b!r}" for a, b in spec["kw"].items())
    return {
        "kind": "conv",
        "mod": f"{spec['cls']}({spec['cin']}, {spec['cout']}, {spec['k']!r}, {kw})",
        "body": "self.m(x)",
        "tail": spec["epi"],
        "inputs": [[spec["n"], spec["cin"], *spec["size"]]],
        "dtype": spec["dtype"],
    }


def gather_module(rng: random.Random) -> dict[str, Any]:
    """A random row gather (an embedding, ``x[idx]`` on some dimension, ``index_select``) with a short tail; an
    index input is ``{"index": shape, "high": rows}`` (drawn by ``torch.randint(0, rows, shape)``)."""
    dt = rng.choice(["float32", "float32", "bfloat16", "float16"])
    which = rng.choice(["embedding", "index", "index_dim", "index_select", "table"])
    idx_shape = _shape(rng, rng.randint(1, 3), 1, 12)
    tail = rng.choice(["", " * 2.0", ".sum(-1)", ".relu()", " + 1.0"])
    if which == "embedding":
        v, d = rng.randint(2, 60), rng.randint(1, 70)
        return dict(kind="gather", mod=f"torch.nn.Embedding({v}, {d})", body=f"self.m(x){tail}",
                    inputs=[{"index": idx_shape, "high": v}], dtype=dt)  # fmt: skip
    s = _shape(rng, rng.randint(1, 4), 1, 20)
    d = rng.randrange(len(s))
    index = {"index": idx_shape if which != "index_select" else [rng.randint(1, 12)], "high": s[d]}
    if which == "index":
        d, index["high"] = 0, s[0]
        body = f"x[y]{tail}"
    elif which == "index_dim":
        body = f"x[{':, ' * d}y]{tail}"
    elif which == "index_select":
        body = f"torch.index_select(x, {d}, y){tail}"
    else:  # a parameter table read through an index (a relative-position bias)
        return dict(kind="gather", mod=f"torch.nn.Linear({s[-1]}, {rng.randint(1, 9)}, bias=False)",
                    body=f"self.m.weight[x]{tail}", inputs=[{"index": idx_shape, "high": 0}], dtype=dt,
                    table=True)  # fmt: skip
    return dict(kind="gather", mod="torch.nn.Identity()", body=body, inputs=[s, index], dtype=dt)


def _input_text(s: Any, spec: dict[str, Any]) -> str:
    if isinstance(s, dict):  # an index tensor (a table's rows: the Linear's out_features)
        high = s["high"] or int(spec["mod"].rsplit(", ", 2)[1])
        return f"torch.randint(0, {high}, {s['index']})"
    return f"torch.randn({s}).to(torch.{spec['dtype']})"


def write(spec: dict[str, Any], path: Path) -> None:
    args = ", ".join("xyz"[: len(spec["inputs"])])
    ins = ", ".join(_input_text(s, spec) for s in spec["inputs"])
    tail = spec.get("tail", "")
    body = f"y = {spec['body']}{tail}; return y" if tail else f"return {spec['body']}"
    path.write_text(
        textwrap.dedent(f"""
        import torch


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = {spec["mod"]}
                self.m = self.m.to(torch.{spec["dtype"]})

            def forward(self, {args}):
                {body}


        def get_inputs():
            return [{ins}]


        def get_init_inputs():
            return []
        """)
    )


def main() -> int:
    from argus.frontend import solve

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--kinds", nargs="+", default=["conv", "ops"], choices=["conv", "ops", "gather"])
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    start, i = time.time(), 0
    with open(out / "rows.jsonl", "a") as sink:
        while time.time() - start < args.seconds:
            kind = rng.choice(args.kinds)
            spec = {"conv": conv_module, "gather": gather_module}.get(kind, module_config)(rng)
            if spec is None:
                continue
            i += 1
            name = f"m{args.seed}_{i}"
            path = out / f"{name}.py"
            write(spec, path)
            t = time.perf_counter()
            row: dict[str, Any] = {"name": name, "spec": spec}
            try:
                r = solve(path, out=out / f"{name}_sol.py", judge=True)
                row.update(
                    status=r.status(),
                    uncovered=[(u.get("op"), u.get("reason", "")[:300]) for u in r.uncovered],
                    kernels=[(k.verdict, k.interpreter_ok) for k in r.kernels],
                    gate=getattr(r.gate, "verdict", None) if r.gate else None,
                )
            except Exception as e:  # noqa: BLE001 (every failure is a row: the sweep goes on)
                row.update(status="CRASH", error=f"{type(e).__name__}: {e}"[:800], trace=traceback.format_exc()[-1500:])
            row["seconds"] = round(time.perf_counter() - t, 1)
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(name, row["status"], spec["mod"][:60], spec["body"][:60], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
