#!/usr/bin/env bash
# Session 73: the convolution lineage's six rungs (the swizzle and TMA + wgmma rungs new) through the gate on the GPU
# (verified, correct, timed interleaved with eager, torch.compile and cuDNN on channels-last tensors) at the
# conv2d_nhwc task's two benchmark sizes (KLineage's N = 8, 56x56, 64 -> 128; ResNet's first stage at batch 32).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } \
  2>&1 | tee $R/env.txt
timeout 500 python3 benchmarks/grouped_lineage.py $R --tasks conv2d_nhwc --rounds 10 > $R/run.log 2>&1
echo "exit $?" >> $R/run.log
tail -n 40 $R/run.log | cut -c1-300
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $R/env.txt
