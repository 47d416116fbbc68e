#!/usr/bin/env bash
# device call 2 (session 24): KernelBench level 2 and 1 problems whose convolutions are 3-d, judged with the implicit
# kernel's 3-d form on (IMPLICIT_3D = True since call 1), and level 2's 93 (fixed in session 23) and 96
# (solutions generated on a CPU in session 23: .gen23/c3l2, level 1 from benchmarks/results/2026-11-29-conv-level1/solutions; the plan is chosen when a solution runs)
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
judge 2 .gen23/c3l2 ${IDS2:-3,13,15,20,26,38,47,61,74,78,100,93,96} ${L2_S:-380} l2
judge 1 benchmarks/results/2026-11-29-conv-level1/solutions ${IDS1:-58,61,77} ${L1_S:-170} l1
date -u >> $OUT/env.txt
