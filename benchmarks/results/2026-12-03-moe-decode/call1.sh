#!/usr/bin/env bash
# device call 1 (session 45, issue #23): where a MoE decode step's time goes (each step's CUDA-graph replay and its
# kernels' profiler times at 1 and 16 tokens), and the layer at decode sizes against the composed layer after the
# routing's softmax fast path (CUDA graphs, interleaved).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/moe1
timeout -k 5 90 python3 benchmarks/moe_decode_profile.py --tokens 1 16 --shapes Mixtral Qwen3-30B-A3B > $OUT/moe1/profile.txt 2>&1
timeout -k 5 150 python3 benchmarks/moe_layer_bench.py --graphs --tokens 1 16 64 --routings balanced --no-compile \
  --rounds 10 --shapes Mixtral Qwen3-30B-A3B --json $OUT/moe1/layer.json > $OUT/moe1/layer.txt 2>&1
