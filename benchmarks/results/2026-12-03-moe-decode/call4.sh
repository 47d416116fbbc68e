#!/usr/bin/env bash
# device call 4 (session 45, issue #23): the layer at decode sizes on DeepSeek-V3 dimensions after the SwiGLU
# up-projection's wide tiles were extended to I >= 2048 (CUDA graphs, interleaved with the composed layer).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call4
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; date -u; } > $OUT/call4/env.txt 2>&1
timeout -k 5 150 python3 benchmarks/moe_layer_bench.py --graphs --tokens 1 16 64 256 --routings balanced --no-compile \
  --rounds 6 --shapes DeepSeek-V3 --json $OUT/call4/layer.json > $OUT/call4/layer.txt 2>&1
