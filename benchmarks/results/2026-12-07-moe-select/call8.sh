#!/usr/bin/env bash
# Session 71, call 8 (issue #23): call 7's A/B cases that did not fit in one process (each case in its own process
# now, and the weights drawn in bf16).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env8.txt 2>&1
for case in DeepSeek-V3:8 DeepSeek-V3:32 DeepSeek-V3:256 DeepSeek-V3:1; do
  timeout 120 python3 benchmarks/moe_layer_ab.py --routing deepseek --switches SELECT_KERNEL --cases $case \
    --rounds 15 2>&1 | tee -a $R/select8.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env8.txt 2>&1
