#!/usr/bin/env bash
# Session 73, call 2: KLineage's walk of the attention expert (`attention_overlap`, rung 10) on the GPU, each step
# gated and timed at the task's BH = 16, S = 4096 (D = 64), and the skills it mines with their measured effects; then
# rung 8 with the overlap and no ping-pong beside rungs 8-10 at d128 (what `sdpa.choose` runs at d128: the overlap
# alone).
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
mkdir -p $R/walk
timeout 400 python3 benchmarks/lineage_walk.py attention_overlap $R/walk --steps 8 --sizes "attention:BH=16,S=4096" \
  --reps 10 > $R/walk/log.txt 2>&1
echo "exit $?" >> $R/walk/log.txt
tail -n 30 $R/walk/log.txt | cut -c1-250
timeout 150 python3 benchmarks/attention_lineage_tiles.py --d 128 --shapes 16,4096 --rounds 10 \
  --variants attention_p_registers attention_p_registers:OVERLAP=1 attention_pingpong attention_overlap \
  --json $R/overlap128.json 2>&1 | tee $R/overlap128.md
cd $R && tar czf walk.tgz walk && rm -rf walk
