#!/usr/bin/env bash
# Everything built on the CPU that has not run on a GPU yet, in one call (about 8 minutes on an H200):
#   1. the GPU test tiers of attention (sdpa: every layout, decoding, P in registers), convolution and the fused
#      GEMM epilogues, against torch;
#   2. the attention sweep (benchmarks/attention_sweep.py --quick): argus (P through shared memory and in
#      registers) interleaved with SDPA's cuDNN and FlashAttention-2 backends.
# Results, the environment and the logs go to OUT_DIR (one tarball's worth: a few small files).
#
#   bash benchmarks/pending_gpu.sh OUT_DIR
#
# On the lent GPU machine z3 travels as a wheel (.whl, see the device README) and PYTHONPATH must hold it.
set -uo pipefail
out="${1:?usage: pending_gpu.sh OUT_DIR}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
timeout 300 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "gpu" \
  tests/kernels/test_sdpa.py tests/kernels/test_conv.py tests/kernels/test_gemm_epilogue.py > "$out/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
tail -15 "$out/gpu_tests.log"
timeout 420 python3 benchmarks/attention_sweep.py --quick --rounds 15 --json "$out/attention.json" \
  > "$out/attention.md" 2>&1
echo "attention sweep: exit $?" | tee -a "$out/summary.txt"
cat "$out/attention.md"
