#!/usr/bin/env bash
# device call 7 (session 32, one H200): swap_choice's fallback for tall weights (more unsplit swap tiles than SMs:
# the unsplit swap tile of the fewest waves) against the model's plain tiles (--sweep 2) and the other swap plans
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
SHAPES="8,28672,8192 32,28672,4096 64,28672,4096 96,16384,8192 16,32768,4096 1,4096,4096"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 200 python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 2 --budget 0.4 \
  --swap --json $OUT/tall7.json > $OUT/tall7.txt 2>&1
echo "exit $?" >> $OUT/tall7.txt; grep -v "^compile" $OUT/tall7.txt | cut -c1-220 | tail -n 10
