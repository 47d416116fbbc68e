#!/usr/bin/env bash
# Session 68, call 2: the layer with DECODE_UP_SPLITS on and off (Mixtral at 1 and 2 tokens, Qwen3-30B-A3B at 2,
# where `decode_up_split` splits), and with DECODE_SPLITS on and off where `decode_plan` now splits over several waves
# (dropped after call 1: the narrow split ran slower there); graphed and eager, interleaved, each output checked against the f32 reference.
export PYTHONPATH=$PWD/.z3:$PWD/src
timeout 280 python3 benchmarks/moe_layer_ab.py --switches DECODE_UP_SPLITS --cases Mixtral:1 Mixtral:2 Qwen3-30B-A3B:2 Qwen3-30B-A3B:1 --rounds 15 2>&1 | tee $OUT/layer-up.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $OUT/env.txt 2>/dev/null || nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/env2.txt
