#!/usr/bin/env bash
# device call 7: level 2's convolution problems judged at their own sizes, continued: 3, 7, 11, 74, 90 solved again
# on a CPU after the grid-order and register-budget fixes (run ff877e9ac07d of .gen22d, whose solutions directory
# holds run 424552acabfb's other solutions), then more of the others, until the time is up
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 20 -s INT ${JUDGE_S:-470} python3 -m argus kernelbench --problems .kbdata/kernelbench --level 2 \
  --solutions .gen22d/solutions --only ${IDS:-3,7,11,74,90,15,16,17,19,20,21,23,24,25,26,27,32,35,36,42,44,46,54} \
  --trials 2 --reps 10 --timeout 150 --store $OUT/l2.sqlite --csv $OUT/l2.csv > $OUT/l2.log 2>&1
echo "judge exit $?" >> $OUT/l2.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/l2.sqlite
