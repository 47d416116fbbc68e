#!/usr/bin/env bash
# Session 67, call 1 (with the fused conv split's GPU tests, rerun after the test's fix): the MoE down-projection
# split along K at decode (`grouped_gemm_persistent` SPLITS, `moe.decode_splits`, `moe.DECODE_SPLITS`): the GPU tests
# of the flattened convolution, the grouped GEMM and the layer; Mixtral's down-projection alone at 1 and 2 tokens
# under its chosen tile and split forms; the layer with DECODE_SPLITS on and off (graphed and eager), interleaved.
export PYTHONPATH=$PWD/.z3:$PWD/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env-moe.txt
timeout 240 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_conv_im2col.py tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu 2>&1 | tail -6 | tee $OUT/pytest.txt
timeout 150 python3 benchmarks/moe_decode_configs.py --shapes Mixtral --tokens 1 2 --products down --rounds 20 --config 64x128x64:8 --config 64x128x64:8:s2 --config 64x128x64:8:s4 --config 64x64x64:8:s2 --json $OUT/down.json 2>&1 | tee $OUT/down.txt
timeout 180 python3 benchmarks/moe_layer_ab.py --switches DECODE_SPLITS --cases Mixtral:1 Mixtral:2 Qwen3-30B-A3B:1 --rounds 15 2>&1 | tee $OUT/layer.txt
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $OUT/env-moe.txt
