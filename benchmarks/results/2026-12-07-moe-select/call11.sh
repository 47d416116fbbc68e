#!/usr/bin/env bash
# Session 71, call 11 (issue #23): the decode table at the session's end, a bf16 router (the models' gate dtype):
# this session's defaults (dependent launches at decode, the 16-bit logits product; DeepSeek-V3 with its own routing
# and the select kernel) against all of them off, interleaved, each case in its own process.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env11.txt 2>&1
for case in Mixtral:1 Mixtral:16 Mixtral:256 Qwen3-30B-A3B:1 Qwen3-30B-A3B:8 Qwen3-30B-A3B:64; do
  timeout 75 python3 benchmarks/moe_layer_ab.py --router bf16 --switches DEPENDENT_LAUNCHES LOGITS_16BIT \
    --cases $case --rounds 10 2>&1 | grep "^| [A-Z]" | tee -a $R/decode11.txt
done
for case in DeepSeek-V3:1 DeepSeek-V3:8 DeepSeek-V3:32; do
  timeout 75 python3 benchmarks/moe_layer_ab.py --router bf16 --routing deepseek \
    --switches DEPENDENT_LAUNCHES LOGITS_16BIT SELECT_KERNEL --cases $case --rounds 10 2>&1 | grep "^| [A-Z]" \
    | tee -a $R/decode11.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env11.txt 2>&1
