#!/usr/bin/env bash
# Attention on a GPU in one call (issue #22): the GPU test tiers of attention, convolution and the GEMMs against
# torch; the attention sweep (benchmarks/attention_sweep.py --quick) interleaved with SDPA's cuDNN and FA2 backends;
# a profile of one d=128 call under Nsight Compute (benchmarks/attention_profile.py); the GEMM parity probe on two
# shapes (the code generator's wgmma descriptors are shared with the GEMMs). At most 9.5 minutes on an H200.
#
#   [ALT=PINGPONG=1] bash benchmarks/attention_gpu.sh OUT_DIR     (ALT: a variant timed beside the chosen one)
#
# On the lent GPU machine z3 travels as a wheel (.whl, see the device README) and PYTHONPATH must hold it.
set -uo pipefail
out="${1:?usage: attention_gpu.sh OUT_DIR}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "gpu" tests/kernels/test_sdpa.py \
  tests/kernels/test_conv.py tests/kernels/test_gemm_epilogue.py tests/kernels/test_gemm_matmul.py > "$out/gpu_tests.log" 2>&1
echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
tail -8 "$out/gpu_tests.log"
timeout 200 python3 benchmarks/attention_sweep.py --quick --rounds 15 ${ALT:+--alt "$ALT"} --json "$out/attention.json" \
  > "$out/attention.md" 2>&1
echo "attention sweep: exit $?" | tee -a "$out/summary.txt"
cat "$out/attention.md"
timeout 90 ncu --kernel-name flash_attention --launch-skip 3 --launch-count 1 --section SpeedOfLight \
  --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis --section Occupancy \
  python3 benchmarks/attention_profile.py 128 > "$out/ncu_d128.txt" 2>&1
echo "ncu: exit $?" | tee -a "$out/summary.txt"
grep -E "Duration|Compute \(SM\) Throughput|Issue Slots|Executed Ipc|Stall|Warp Cycles|Tensor|Registers" "$out/ncu_d128.txt" | head -30
timeout 90 python3 benchmarks/gemm_parity.py --rounds 60 --shapes 4096,4096,4096 8192,8192,8192 \
  --kernels gemm_hopper_persistent > "$out/gemm_parity.md" 2>&1
echo "gemm parity: exit $?" | tee -a "$out/summary.txt"
tail -12 "$out/gemm_parity.md"
