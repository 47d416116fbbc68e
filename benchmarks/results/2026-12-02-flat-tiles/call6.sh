#!/usr/bin/env bash
# Session 40, call 6: the final planner (flattened tiles; 256 filters a tile by the wave model) on every row:
# ResNet-50 at batch 32, the rows of few tiles, the held-out rows; the implicit kernel's tile and cuDNN beside each.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=$PWD/src:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
timeout 560 python3 benchmarks/conv_implicit_sweep.py --flat --extra --heldout --rounds 15 --json $OUT/sweep.json 2>&1 | tee $OUT/sweep.txt | tail -12
