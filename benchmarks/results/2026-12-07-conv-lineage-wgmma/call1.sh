#!/usr/bin/env bash
# Session 73 (one device call for two slices): (1) the convolution lineage's seven rungs (swizzle, TMA + wgmma and
# warp roles new) through the gate on the GPU (verified, correct, timed interleaved with eager, torch.compile and
# cuDNN on channels-last tensors) at the conv2d_nhwc task's benchmark sizes; (2) KLineage's walk of the attention
# expert (attention_overlap), its three FlashAttention-3 steps gated and timed at BH = 16, S = 4096, and the skills
# it mines; (3) rung 8 with the overlap and no ping-pong beside rungs 8-10 at d128.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
A=$R/attention
mkdir -p $A
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv; python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } \
  2>&1 | tee $R/env.txt
timeout 300 python3 benchmarks/grouped_lineage.py $R --tasks conv2d_nhwc --rounds 10 > $R/run.log 2>&1
echo "exit $?" >> $R/run.log
tail -n 30 $R/run.log | cut -c1-300
timeout 150 python3 benchmarks/lineage_walk.py attention_overlap $A/walk --steps 3 --sizes "attention:BH=16,S=4096" \
  --reps 10 > $A/walk.log 2>&1
echo "exit $?" >> $A/walk.log
tail -n 12 $A/walk.log | cut -c1-250
timeout 100 python3 benchmarks/attention_lineage_tiles.py --d 128 --shapes 16,4096 --rounds 10 \
  --variants attention_p_registers attention_p_registers:OVERLAP=1 attention_pingpong attention_overlap \
  --json $A/overlap128.json 2>&1 | tee $A/overlap128.md | tail -6
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv | tee -a $R/env.txt
cd $R && tar czf attention.tgz attention && rm -rf attention
