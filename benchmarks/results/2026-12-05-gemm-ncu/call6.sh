#!/usr/bin/env bash
# device call 6 (session 59, issue #20): the FP8 suites (the four shapes and the held-out ones) with the plan as
# committed (the tail-twin rule takes tail3 at 8192x8192x28672), per-tensor scales, against torch._scaled_mm.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call6
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 300 python3 benchmarks/gemm_fp8.py --sweep 1 --budget 0.5 --json $R/fp8.json > $R/fp8.txt 2>&1
echo "exit $?" >> $R/fp8.txt
grep -h -v "^    " $R/fp8.txt | tail -30 | cut -c1-230
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
cd $OUT && tar czf call6.tgz call6 && rm -rf call6
