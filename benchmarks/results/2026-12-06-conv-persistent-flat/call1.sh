#!/usr/bin/env bash
# Session 66, call 1: the flattened-position kernel's persistent forms (`conv_im2col_gemm` BLOCKS > 0): ResNet-50 at
# batch 32, KLineage's row, the held-out rows and the rows of odd widths, each row's plan beside "flatp c2" (128
# positions a tile, a block an SM), "flatp c1" (64 positions, one consumer warpgroup, two blocks an SM) and, where the
# plan is not flattened, the flattened tile a block per tile ("flat"), interleaved with cuDNN; every output checked
# against conv2d in float64 first. NAME: the output's stem; SHAPES: more options.
export PYTHONPATH=$PWD/.z3:$PWD/src
NAME=${NAME:-sweep}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env-$NAME.txt
DEFAULT='--heldout --widths'
SHAPES=${SHAPES:-$DEFAULT}
eval timeout ${LIMIT:-560} python3 benchmarks/conv_implicit_sweep.py --persistent --rounds ${ROUNDS:-10} --json $OUT/$NAME.json $SHAPES 2>&1 | tee $OUT/$NAME.txt | tail -8
timeout 120 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_conv_im2col.py -k gpu 2>&1 | tail -3 | tee $OUT/pytest-$NAME.txt
