#!/usr/bin/env bash
# Session 73, call 2: the convolution lineage's rungs 8 (persistent grid) and 9 (TMA-store epilogue), new since call
# 1, through the gate on the GPU beside rungs 6 and 7, at the conv2d_nhwc task's two benchmark sizes.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv; } 2>&1 | tee $R/env2.txt
for k in conv_tma_wgmma conv_warp_specialized conv_warp_specialized_persistent conv_tma_store_epilogue; do
  timeout 120 python3 benchmarks/grouped_lineage.py $R --tasks $k --rounds 10 > $R/run2-$k.log 2>&1
  echo "exit $?" >> $R/run2-$k.log
  grep "^| conv" $R/run2-$k.log | cut -c1-260
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $R/env2.txt
rm -f $R/bench-*.json
