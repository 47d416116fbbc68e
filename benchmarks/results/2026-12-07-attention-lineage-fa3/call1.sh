#!/usr/bin/env bash
# Session 73, call 1: the attention lineage's rungs 8-10 (P in registers, ping-pong, intra-warpgroup overlap) on the
# GPU against SDPA's math backend, then the whole lineage timed at d128 and d64 (S = 4096, BH = 16: 64k tokens x
# heads), interleaved with SDPA's cuDNN and FlashAttention-2 backends, L2 flushed.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } \
  2>&1 | tee $R/env.txt
timeout 120 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_attention_lineage_fa3.py -k gpu \
  2>&1 | tail -5 | tee $R/pytest1.txt
timeout 200 python3 benchmarks/attention_lineage_tiles.py --lineage --d 128 --shapes 16,4096 --rounds 10 \
  --json $R/lineage128.json 2>&1 | tee $R/lineage128.md
timeout 200 python3 benchmarks/attention_lineage_tiles.py --lineage --d 64 --shapes 16,4096 --rounds 10 \
  --json $R/lineage64.json 2>&1 | tee $R/lineage64.md
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $R/env.txt
