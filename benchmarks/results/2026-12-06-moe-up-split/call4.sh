#!/usr/bin/env bash
# Session 68, call 4 (the rule after calls 1-3: the wide decode tile split by wave fill in shares of at least
# 512 KiB): the GPU tests of the grouped GEMMs and the layer; each product alone at 1 and 2 tokens ("chosen" against
# "layer", and torch._grouped_mm); the layer with DECODE_SPLITS and DECODE_UP_SPLITS on and off (every combination),
# graphed and eager, interleaved, each output checked against the f32 reference.
export PYTHONPATH=$PWD/.z3:$PWD/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env4.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda)" >> $OUT/env4.txt
HBM=3.35e12; nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && HBM=4.8e12
timeout 200 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu 2>&1 | tail -6 | tee $OUT/pytest4.txt
timeout 200 python3 benchmarks/moe_decode_configs.py --tokens 1 2 --rounds 20 --config 64x128x64:8 --json $OUT/products4.json 2>&1 | tee $OUT/products4.txt
timeout 250 python3 benchmarks/moe_layer_ab.py --hbm $HBM --switches DECODE_SPLITS DECODE_UP_SPLITS --cases Mixtral:1 Mixtral:2 DeepSeek-V3:1 DeepSeek-V3:2 Qwen3-30B-A3B:1 --rounds 15 2>&1 | tee $OUT/layer4.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader >> $OUT/env4.txt
