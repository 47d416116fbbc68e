#!/usr/bin/env bash
# Session 67, call 1: split flattened tiles that sum their slices in their own launch (`conv_im2col_split_fused`,
# `conv.FLAT_FUSE_SPLITS`): ResNet-50 at batch 32, its late layers at batch 8 and 1, the held-out rows, each row's
# plan beside the planner without FLAT_FUSE_SPLITS ("unfused": the split's reduction in a second launch) and the
# other fused splits ("fused w<BN> s<S>"), interleaved with cuDNN, every output checked against conv2d in float64
# first; then the flattened tiles' GPU tests. NAME: the output's stem; SHAPES: more options.
export PYTHONPATH=$PWD/.z3:$PWD/src
NAME=${NAME:-fused}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env-$NAME.txt
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_conv_im2col.py -k gpu 2>&1 | tail -5 | tee $OUT/pytest-$NAME.txt
SHAPES=${SHAPES:-'--extra --heldout'}
eval timeout ${LIMIT:-420} python3 benchmarks/conv_implicit_sweep.py --fused --rounds ${ROUNDS:-15} --json $OUT/$NAME.json $SHAPES 2>&1 | tee $OUT/$NAME.txt | tail -12
