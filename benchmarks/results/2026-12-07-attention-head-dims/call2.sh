#!/usr/bin/env bash
# Session 72, call 2: the sliding windows against FlexAttention compiled afresh for each row (call 1's flex kept the
# first window: 0.1 error at W = 4096), and the attention GPU tests with room to compile (call 1's 120 s ran out).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
timeout 150 python3 benchmarks/attention_window.py --rounds 15 --head-dims 64 128 --lengths 16384 --windows 4096 1024 \
  --json $R/window2.json 2>&1 | tee $R/window2.md
timeout 250 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py \
  tests/kernels/test_sdpa_varlen.py tests/kernels/test_sdpa_paged.py -k "gpu" 2>&1 | tail -5 | tee $R/pytest2.txt
