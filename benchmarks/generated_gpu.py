"""A generated (untrusted) DSL kernel gated on the GPU: traced in a sandbox, judged here as IR — compiled by argus
from the decoded IR, loaded, checked and timed interleaved with the task's baselines.

    python benchmarks/generated_gpu.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "eval"))


def main() -> None:
    from test_generated_in_sandbox import HONEST, TAMPERING

    from argus.eval.gate import GateOptions
    from argus.eval.judge import gate_generated_kernel
    from argus.tasks.builtin import get_task

    options = GateOptions(device="cuda", reps=50, cost_sizes={"N": 1 << 24})
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in (("honest", HONEST), ("tampering", TAMPERING.replace("@MARKER@", f"{tmp}/marker"))):
            path = Path(tmp) / f"{name}.py"
            path.write_text(text)
            result = gate_generated_kernel(get_task("vector_add"), name, path, "vadd", {}, text, options)
            print(f"## {name}: {result.summary()}")
            for stage in result.stages:
                print(f"  {stage.stage}: {stage.status} {stage.code or ''} {stage.reason[:160]}")
            print("  sandbox:", {k: result.environment.get("sandbox", {}).get(k) for k in ("traced_in_sandbox", "uid")})
            print("  marker written:", (Path(tmp) / "marker").exists())


if __name__ == "__main__":
    main()
