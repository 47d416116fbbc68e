#!/usr/bin/env bash
# device call 3: level 1's 83 probed launch by launch; 74 and 79 judged again (their call-1 rows, rejected for the
# split's grid, deleted from the store) after the split's fix; 76 judged (run e7832c882efc)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
for b in 4 64; do CUDA_LAUNCH_BLOCKING=1 timeout 90 python3 benchmarks/results/2026-11-29-conv-level1/probe83.py $b >> $OUT/probe83.log 2>&1; echo "exit $?" >> $OUT/probe83.log; done
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE_S:-200} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21/solutions --store .gen21/kb.sqlite --resume 2bac9916ddf5 --only 74,79 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE76_S:-200} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21b/solutions --store .gen21b/kb.sqlite --resume e7832c882efc --only 76 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb76.csv > $OUT/kb76.log 2>&1
echo "judge exit $?" >> $OUT/kb76.log
date -u >> $OUT/env.txt
for d in .gen21 .gen21b; do python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $d/kb.sqlite; done
tar czf $OUT/stores.tgz .gen21/kb.sqlite .gen21b/kb.sqlite
