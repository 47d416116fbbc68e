#!/usr/bin/env bash
# The guide's kernels (docs/guide.md: GELU, RMSNorm, GEMM + bias + ReLU), written from the guide's own blocks,
# gated and timed on the GPU with `argus bench FILE.py:NAME` (the kernel traced in a sandbox, its own task, timed
# interleaved with PyTorch eager and torch.compile of the reference), and the GPU test tier.
#
#   bash benchmarks/guide_gpu.sh OUT_DIR
set -uo pipefail
out="${1:?usage: guide_gpu.sh OUT_DIR}"
mkdir -p "$out"
work="$(mktemp -d)"
python3 - "$work" <<'EOF'
import re, sys, pathlib
doc = pathlib.Path("docs/guide.md").read_text()
for name, body in re.findall(r"```python file=(\S+)\n(.*?)```", doc, re.S):
    (pathlib.Path(sys.argv[1]) / name).write_text(body)
EOF
{
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
run() {  # name, then the bench arguments
  local name="$1"; shift
  (cd "$work" && python3 -m argus bench "$@" --reps 100 --json "$out/$name.json" --markdown "$out/$name.md") \
    > "$out/$name.log" 2>&1
  echo "$name: exit $?" >> "$out/summary.txt"
}
run gelu gelu.py:gelu --shapes "N=1048576;N=16777216" --baselines eager,compile
run rmsnorm rmsnorm.py:rmsnorm --shapes "M=4096,N=128;M=65536,N=128" --baselines eager,compile
run linear linear.py:linear_relu --shapes "M=2048,N=2048,K=2048;M=4096,N=4096,K=4096" --baselines eager,compile
# the GPU tier: the test files that hold GPU tests (the others need packages the GPU machine has no registry for)
timeout 420 python3 -m pytest -q -m gpu -o addopts="" -p no:cacheprovider tests/runtime/test_gpu.py \
  tests/kernels/test_gemm_residual.py tests/kernels/test_gemm_layouts.py tests/kernels/test_gemm_tma_store.py \
  tests/eval/test_gate.py tests/tasks/test_kernelbench.py > "$out/gpu_tier.txt" 2>&1
echo "gpu tier: exit $?" >> "$out/summary.txt"
tail -3 "$out/gpu_tier.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
