#!/usr/bin/env bash
# Session 40, call 5: held-out rows (no tile choice was tuned on them): the planned tile, the implicit kernel's tile
# and cuDNN interleaved; then the im2col probe on one row (it passes the kernel's new bias placeholder).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=$PWD/src:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
timeout 420 python3 benchmarks/conv_implicit_sweep.py --flat --heldout --rounds 15 --only vgg16 --only unet --only yolo --only odd --only b64 --only sd --json $OUT/sweep.json 2>&1 | tee $OUT/sweep.txt | tail -25
timeout 120 python3 benchmarks/conv_im2col_probe.py --rounds 5 --only "r50 3x3 256->256 14" 2>&1 | tee $OUT/probe.txt | tail -5
