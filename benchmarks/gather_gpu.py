"""Row gathers solved by `argus solve` (`argus.frontend.families.gather`, session 76) on a GPU: an embedding lookup,
a table read through a 2-d index and an ``index_select`` of a middle dimension, each written as a small problem,
solved (captured, generated, verified; no gate), its ModelNew checked equal to the eager Model bit for bit, then
timed interleaved with eager PyTorch and ``torch.compile`` of the Model in one process, L2 flushed before every
launch (`gemm_parity.interleaved_times`), medians. Bandwidth counts the rows read and written (and the indices).

    PYTHONPATH=src python benchmarks/gather_gpu.py OUT_DIR [--rounds 30] [--rows 0 3 4]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import textwrap
from pathlib import Path

try:
    import argus  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_parity import interleaved_times  # noqa: E402
from gemm_variants import environment  # noqa: E402

HBM = {"H100": 3.35e12, "H200": 4.8e12}
#: (label, module init, forward body, inputs, the bytes a call must move as a function of torch)
ROWS = (
    ("embedding 32000x4096 bf16, 8192 tokens", "torch.nn.Embedding(32000, 4096).to(torch.bfloat16)", "self.m(x)",
     "[torch.randint(0, 32000, (4, 2048))]", 2 * 8192 * 4096 * 2 + 8192 * 8),
    ("embedding 50257x768 f32, 16384 tokens", "torch.nn.Embedding(50257, 768)", "self.m(x)",
     "[torch.randint(0, 50257, (8, 2048))]", 2 * 16384 * 768 * 4 + 16384 * 8),
    ("embedding 128256x4096 bf16, 64 tokens (decode)", "torch.nn.Embedding(128256, 4096).to(torch.bfloat16)",
     "self.m(x)", "[torch.randint(0, 128256, (64, 1))]", 2 * 64 * 4096 * 2 + 64 * 8),
    ("index (169, 16) f32 by (49, 49)", "torch.nn.Linear(16, 169, bias=False)", "self.m.weight[x]",
     "[torch.randint(0, 169, (49, 49))]", 2 * 2401 * 16 * 4 + 2401 * 8),
    ("index_select dim 1 (32, 8192, 128) bf16, 4096 rows", "torch.nn.Identity()", "torch.index_select(y, 1, x)",
     "[torch.randint(0, 8192, (4096,)), torch.randn(32, 8192, 128, dtype=torch.bfloat16)]",
     2 * 32 * 4096 * 128 * 2 + 4096 * 8),
)  # fmt: skip


def _problem(path: Path, init: str, body: str, inputs: str) -> None:
    args = "x, y" if "y" in body else "x"
    path.write_text(
        textwrap.dedent(f"""
        import torch


        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.m = {init}

            def forward(self, {args}):
                return {body}


        def get_inputs():
            return {inputs}


        def get_init_inputs():
            return []
        """)
    )


def _load(path: Path, name: str):  # noqa: ANN202
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--rows", type=int, nargs="+", help="the rows of ROWS to run (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    import torch

    from argus.frontend import solve
    from argus.tasks.kernelbench import PROBLEM_ENV

    for line in environment(torch):
        print(line)
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    hbm = next((v for k, v in HBM.items() if k in torch.cuda.get_device_name()), HBM["H200"])
    print("\n| row | argus µs | eager µs | compile µs | x eager | x compile | argus TB/s | % HBM | equal |")
    print("|---|---|---|---|---|---|---|---|---|")
    results, failed = [], False
    for i, (label, init, body, inputs, moved) in enumerate(ROWS):
        if args.rows and i not in args.rows:
            continue
        problem = args.out / f"gather{i}.py"
        _problem(problem, init, body, inputs)
        result = solve(problem, out=args.out / f"gather{i}_sol.py", judge=False)
        row = {"row": label, "status": result.status(), "groups": [g["family"] for g in result.groups]}
        if result.uncovered or not all(k.verdict == "verified" for k in result.kernels):
            row["error"] = f"not solved: {[u.get('op') for u in result.uncovered]}"
            print(f"| {label} | {row['error']} |")
            failed = True
            results.append(row)
            continue
        os.environ[PROBLEM_ENV] = str(problem)
        ref_mod = _load(problem, f"p{i}")
        sol_mod = _load(args.out / f"gather{i}_sol.py", f"s{i}")
        torch.manual_seed(i)
        model = ref_mod.Model().cuda()
        new = sol_mod.ModelNew().cuda()
        if hasattr(new, "reference"):  # the solution reads the problem's parameters from its own Model
            new.reference.load_state_dict(model.state_dict())
        x = [t.cuda() for t in ref_mod.get_inputs()]
        compiled = torch.compile(model)
        with torch.no_grad():
            want, got, comp = model(*x), new(*x), compiled(*x)
            torch.cuda.synchronize()
            equal = torch.equal(want, got)
            failed |= not equal
            times = interleaved_times(
                torch, {name: (lambda f=f: f(*x)) for name, f in (("argus", new), ("eager", model),  # noqa: B023
                                                                 ("compile", compiled))},
                args.rounds, scratch,
            )  # fmt: skip
        del comp
        med = {k: statistics.median(v) for k, v in times.items()}
        rate = moved / (med["argus"] * 1e-3)
        row.update({f"{k}_ms": v for k, v in med.items()}, equal=equal, rate=rate, hbm=rate / hbm)
        print(
            f"| {label} | {med['argus'] * 1e3:.1f} | {med['eager'] * 1e3:.1f} | {med['compile'] * 1e3:.1f} | "
            f"{med['eager'] / med['argus']:.2f} | {med['compile'] / med['argus']:.2f} | {rate / 1e12:.2f} | "
            f"{100 * rate / hbm:.0f} | {equal} |",
            flush=True,
        )
        results.append(row)
    for line in environment(torch):
        print("after:", line)
    (args.out / "gather.json").write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
