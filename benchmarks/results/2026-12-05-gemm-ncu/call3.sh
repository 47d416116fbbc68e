#!/usr/bin/env bash
# device call 3 (session 58, issue #20): what the session's remaining device time allowed: the issue's bf16 suite with
# split slices stored through TMA (the heuristic) and, where that changes a plan, with direct stores (--split-direct).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call3
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 140 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 --split-direct \
    --json $R/issue.json > $R/issue.txt 2>&1; echo "exit $?" >> $R/issue.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
grep -h -E "geometric|exit|WRONG|Error|refused" $R/issue.txt | cut -c1-200
grep -h -E "^ +[0-9]+x" $R/issue.txt | cut -c1-170
