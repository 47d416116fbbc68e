#!/usr/bin/env bash
# device call 2 (session 56, issue #20): the split-K reduction's block width (REDUCE_BN: 128, 256, 512 columns, 4 a
# thread) at 512x512x65536 (16 slices of 512x512) and at the one-row GEMV 1x4096x4096 (7 slices of one row), each plan
# also with its GEMM kernel alone; then the issue's bf16 suite with the heuristic alone, a fresh sample of every row.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call2
mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $R/env.txt
date -u >> $R/env.txt
D=benchmarks/results/2026-12-05-gemm-reduction
for bn in 128 256 512; do
  timeout -k 5 -s INT 100 python3 $D/reduce_bn.py $bn 512,512,65536 128,256,64,4,2,16,2 128,128,64,6,2,8,2 \
      --rounds 150 --kernel-only > $R/p512_bn$bn.txt 2>&1; echo "exit $?" >> $R/p512_bn$bn.txt
  timeout -k 5 -s INT 60 python3 $D/reduce_bn.py $bn 1,4096,4096 gemv:64,4,256,8,1,7 gemv:64,4,256,8,1,4 \
      --rounds 200 --kernel-only >> $R/p512_bn$bn.txt 2>&1; echo "exit $?" >> $R/p512_bn$bn.txt
done
timeout -k 5 -s INT 300 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 > $R/issue.txt 2>&1; echo "exit $?" >> $R/issue.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
grep -h -v "^    " $R/*.txt | grep -E "x cuBLAS|exit|geometric|WRONG|Error|^[0-9]+x" | cut -c1-160 | head -80
cd $OUT && tar czf call2.tgz call2 && rm -rf call2
