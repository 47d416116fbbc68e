#!/usr/bin/env bash
# Sliding windows and random configurations on a GPU in one call (issue #22, sessions 75-76): the GPU tests of
# varlen, paged and windowed `sdpa`; the windowed varlen call against FlashAttention-2's varlen window and the
# windowed paged decode against the window's tokens laid out contiguously (cuDNN, FA2, argus `sdpa`); then
# `random_configs.py` over the families named in FAMILIES (seed SEED, SECONDS each).
#
#   FAMILIES="attention varlen paged" SEED=1 SECONDS_EACH=40 BENCH=1 NEW76=1 bash benchmarks/windows_gpu.sh OUT_DIR
#
# NEW76=1 adds session 76's GPU checks: the GEMV-with-epilogue GPU test and timing (benchmarks/gemv_epilogue_gpu.py)
# and the row gathers solved and timed (benchmarks/gather_gpu.py).
#
# On the lent GPU machine z3 travels in .z3 (PYTHONPATH=$PWD/.z3).
set -uo pipefail
out="${1:?usage: windows_gpu.sh OUT_DIR}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch, sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"
  git log -1 --format='commit %H' 2>/dev/null || true
} > "$out/env.txt" 2>&1
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1
if [ "${BENCH:-1}" = 1 ]; then
  timeout 300 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "gpu" tests/kernels/test_sdpa_varlen.py \
    tests/kernels/test_sdpa_paged.py tests/kernels/test_sdpa.py > "$out/gpu_tests.log" 2>&1
  echo "gpu tests: exit $?" | tee -a "$out/summary.txt"
  tail -5 "$out/gpu_tests.log"
  timeout 100 python3 benchmarks/attention_varlen.py --rounds 10 --window 1024 --json "$out/varlen_window.json" \
    > "$out/varlen_window.md" 2>&1
  echo "varlen window: exit $?" | tee -a "$out/summary.txt"
  grep "^|" "$out/varlen_window.md"
  timeout 90 python3 benchmarks/attention_paged.py --rounds 10 --window 4096 --json "$out/paged_window.json" \
    > "$out/paged_window.md" 2>&1
  echo "paged window: exit $?" | tee -a "$out/summary.txt"
  grep "^|" "$out/paged_window.md"
fi
if [ "${NEW76:-0}" = 1 ]; then  # session 76's GEMV epilogue and row gathers
  timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" -k "gpu" tests/kernels/test_gemm_epilogue.py \
    > "$out/gpu_tests76.log" 2>&1
  echo "gpu tests 76: exit $?" | tee -a "$out/summary.txt"
  tail -3 "$out/gpu_tests76.log"
  timeout 100 python3 benchmarks/gemv_epilogue_gpu.py --rounds 20 --json "$out/gemv_epilogue.json" > "$out/gemv_epilogue.md" 2>&1
  echo "gemv epilogue: exit $?" | tee -a "$out/summary.txt"
  grep "^|" "$out/gemv_epilogue.md"
  timeout 150 python3 benchmarks/gather_gpu.py "$out/gather" --rounds 20 > "$out/gather.md" 2>&1
  echo "gather: exit $?" | tee -a "$out/summary.txt"
  grep "^|" "$out/gather.md"; rm -f "$out"/gather/*.py
fi
for f in ${FAMILIES:-}; do
  timeout $(( ${SECONDS_EACH:-40} + 40 )) python3 benchmarks/random_configs.py "$out/rows.jsonl" --seed "${SEED:-1}" \
    --seconds "${SECONDS_EACH:-40}" --families "$f" > "$out/random-$f.log" 2>&1
  echo "random $f: exit $?" | tee -a "$out/summary.txt"
  tail -3 "$out/random-$f.log"
done
python3 - "$out/rows.jsonl" <<'PY' 2>/dev/null | tee -a "$out/summary.txt"
import collections, json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
c = collections.Counter((r.get("family"), r.get("verdict")) for r in rows)
for k, n in sorted(c.items()): print(*k, n)
for r in rows:
    if r.get("verdict") not in ("ok", "REFUSED"): print(json.dumps(r)[:400])
PY
