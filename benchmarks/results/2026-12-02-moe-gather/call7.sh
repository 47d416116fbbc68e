#!/usr/bin/env bash
# device call 7 (session 44): the layer at decode sizes on this commit (TMA stores at prefill configurations, which
# 256 tokens of Mixtral take), each contender captured in a CUDA graph, against the composed layer.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; date -u; } > $OUT/env7.txt 2>&1
timeout -k 10 400 python3 benchmarks/moe_layer_bench.py --graphs --tokens 1 16 64 256 --routings balanced --rounds 10 \
  --no-compile --json $OUT/decode7.json > $OUT/decode7.txt 2>&1
echo "exit $?" >> $OUT/decode7.txt; tail -n 30 $OUT/decode7.txt
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env7.txt; date -u >> $OUT/env7.txt
