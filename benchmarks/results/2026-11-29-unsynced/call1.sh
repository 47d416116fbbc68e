#!/usr/bin/env bash
# device call 1 (session 23): the wall-clock probe on two f32 implicit-kernel problems (level 2's 1 and 54), then
# level 2's convolution problems not judged in session 22 (7, 74, 90 solved again after the emit fix)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
K=.kbdata/kernelbench/level2 S=.gen23/all P=benchmarks/results/2026-11-29-unsynced/probe_unsynced.py
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; } > $OUT/env.txt 2>&1
for p in 1_Conv2D_ReLU_BiasAdd 54_Conv2d_Multiply_LeakyReLU_GELU; do
  echo "== $p" >> $OUT/probe.txt
  timeout -k 10 90 python3 $P $K/$p.py $S/$p.py $OUT/trace_${p%%_*}.json >> $OUT/probe.txt 2>&1
done
gzip -f $OUT/trace_*.json
timeout -k 20 -s INT ${JUDGE_S:-420} python3 -m argus kernelbench --problems .kbdata/kernelbench --level 2 \
  --solutions $S --only ${IDS:-7,74,90,38,47,48,50,57,60,61,65,67,72,73,78,82,85,87,89,91,93,96,100} \
  --trials 2 --reps 10 --timeout 150 --store $OUT/l2.sqlite --csv $OUT/l2.csv > $OUT/l2.log 2>&1
echo "judge exit $?" >> $OUT/l2.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/l2.sqlite
