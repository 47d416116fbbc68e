#!/usr/bin/env bash
# Session 65, call 1: the flattened tile's fitted filter widths (`flat_widths`). ResNet-50 at batch 32, KLineage's
# row and the rows of few tiles: each row's plan, and beside each flattened one the 128/256 rule's tile ("rule") and
# every width the planner weighs ("w<BN>"), interleaved with cuDNN; then the flattened tiles' GPU test.
# SHAPES: --only filters (default: call 1's rows); NAME: the output's stem.
export PYTHONPATH=$PWD/.z3:$PWD/src
NAME=${NAME:-sweep}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env-$NAME.txt
DEFAULT='--extra --only KLineage --only r50 --only VGG --only "b16 3x3 1024" --only "b32 3x3 384" --only "b8 3x3 256->128"'
SHAPES=${SHAPES:-$DEFAULT}
eval timeout ${LIMIT:-480} python3 benchmarks/conv_implicit_sweep.py --widths --rounds ${ROUNDS:-10} --json $OUT/$NAME.json $SHAPES 2>&1 | tee $OUT/$NAME.txt | tail -8
timeout 90 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_conv_im2col.py -k gpu 2>&1 | tail -3 | tee $OUT/pytest-$NAME.txt
