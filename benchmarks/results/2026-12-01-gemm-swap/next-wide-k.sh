#!/usr/bin/env bash
# prepared for the next session's device call (not run in session 31): K-blocks of two swizzle spans (BK = 128)
# against the BK = 64 plans at the skinny and square shapes, interleaved with cuBLAS
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
SHAPES="1,4096,4096 4,11008,4096 8,8192,8192 32,4096,14336 96,7168,7168 64,8192,8192 48,1024,65536 512,512,65536 4096,4096,4096 1024,1024,1024"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-420} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 1 --budget 0.4 \
  --swap --wide-k --json $OUT/wide_k.json > $OUT/wide_k.txt 2>&1
echo "exit $?" >> $OUT/wide_k.txt; grep -v "^compile" $OUT/wide_k.txt | cut -c1-300 | tail -n 20
