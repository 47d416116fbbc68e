#!/usr/bin/env bash
# Session 71, call 3 (issue #23): the grouped kernels' expert search at RADIX bits a step (moe.SEARCH_RADIX: 1 = the
# binary search, SEARCH dependent loads before a unit's first TMA load; 4 = two steps of 15 independent loads at 128
# or 256 experts), A/B in the MoE layer, interleaved, eager and graphed: decode (with DEPENDENT_LAUNCHES on and off)
# and prefill; then the decode step's kernels traced at RADIX 4.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env3.txt 2>&1
timeout 280 python3 benchmarks/moe_layer_ab.py --switches SEARCH_RADIX=1,4 DEPENDENT_LAUNCHES \
  --cases Qwen3-30B-A3B:1 Mixtral:1 DeepSeek-V3:1 Qwen3-30B-A3B:8 Qwen3-30B-A3B:64 Mixtral:16 --rounds 15 2>&1 | tee $R/decode3.txt
timeout 150 python3 benchmarks/moe_layer_ab.py --switches SEARCH_RADIX=1,4 \
  --cases Qwen3-30B-A3B:4096 DeepSeek-V3:4096 --rounds 8 2>&1 | tee $R/prefill3.txt
timeout 90 python3 benchmarks/moe_layer_trace.py --cases Qwen3-30B-A3B:1 DeepSeek-V3:1 --replays 20 \
  --set SEARCH_RADIX=4 DEPENDENT_LAUNCHES=1 2>&1 | tee $R/trace3.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env3.txt 2>&1
