#!/usr/bin/env bash
# device call 3 (session 32, one H200): the shapes still below 0.85x cuBLAS, with the six next configurations of the
# model's ranking, the swap-AB splits and the other K-block width of each (is the ranking or the mechanism short?)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
SHAPES="768,768,3072 512,512,65536 160,12288,1536 256,7168,2048 6000,6000,3000 3072,1536,6144 1000,1000,1000 12000,512,1024 128,4096,4096"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-540} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 6 \
  --budget 0.4 --swap --wide-k --json $OUT/weak.json > $OUT/weak.txt 2>&1
echo "exit $?" >> $OUT/weak.txt; grep -v "^compile" $OUT/weak.txt | cut -c1-220 | tail -n 16
