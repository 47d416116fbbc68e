#!/usr/bin/env bash
# device call 3 (session 23): the transposed convolutions of KernelBench levels 2 and 1 (solved on a CPU with the
# stride phases: .gen23/l2t, .gen23/l1t) judged at their own sizes, with level 2's 1 and 61 again (flagged in
# session 22 and call 1; the first judge runs with the wall-clock fix)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
judge() {  # level, solutions, ids, seconds, name
  timeout -k 20 -s INT $4 python3 -m argus kernelbench --problems .kbdata/kernelbench --level $1 --solutions $2 \
    --only $3 --trials 2 --reps 10 --timeout 150 --store $OUT/$5.sqlite --csv $OUT/$5.csv > $OUT/$5.log 2>&1
  echo "judge exit $?" >> $OUT/$5.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/$5.sqlite
}
judge 2 .gen23/c3l2 ${IDS2:-2,5,16,36,44,91,93,10,11,19,42,1,61} ${L2_S:-300} l2
judge 1 .gen23/l1t ${IDS1:-79,81,64,74,57,65,69,71,78} ${L1_S:-230} l1
date -u >> $OUT/env.txt
