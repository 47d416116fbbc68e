#!/usr/bin/env bash
# Session 71, call 7 (issue #23): call 6's A/B again for the cases its run lost to memory (the graphs of the first
# case held its weights: gc between cases now), and the step's kernels with the kernel on and off, dependent launches
# off (each kernel's own time).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env7.txt 2>&1
timeout 300 python3 benchmarks/moe_layer_ab.py --routing deepseek --switches SELECT_KERNEL \
  --cases DeepSeek-V3:1 DeepSeek-V3:8 DeepSeek-V3:32 DeepSeek-V3:256 --rounds 15 2>&1 | tee $R/select7.txt
for on in 1 0; do
  timeout 60 python3 benchmarks/moe_layer_trace.py --routing deepseek --cases DeepSeek-V3:1 --replays 20 \
    --set SELECT_KERNEL=$on DEPENDENT_LAUNCHES=0 2>&1 | tee -a $R/trace7.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env7.txt 2>&1
