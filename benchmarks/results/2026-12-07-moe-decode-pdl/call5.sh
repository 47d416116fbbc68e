#!/usr/bin/env bash
# Session 71, call 5 (issue #23): the layer's programmatic dependent launches at prefill sizes (calls 1 and 3 measured
# decode), and the gather fused into the up-projection's operand load at decode sizes (FUSED_GATHER: one launch less,
# index_select's; measured slower at prefill in session 44), both A/B, interleaved, eager and graphed.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env5.txt 2>&1
timeout 250 python3 benchmarks/moe_layer_ab.py --switches DEPENDENT_LAUNCHES \
  --cases Qwen3-30B-A3B:4096 Mixtral:4096 DeepSeek-V3:4096 Qwen3-30B-A3B:16384 Mixtral:256 --rounds 8 2>&1 | tee $R/pdl_prefill5.txt
timeout 200 python3 benchmarks/moe_layer_ab.py --switches FUSED_GATHER DEPENDENT_LAUNCHES \
  --cases Qwen3-30B-A3B:1 DeepSeek-V3:1 Qwen3-30B-A3B:8 DeepSeek-V3:32 --rounds 15 2>&1 | tee $R/gather5.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env5.txt 2>&1
