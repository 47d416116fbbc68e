#!/usr/bin/env bash
# device call 5 (session 24): the GPU tests after the fix of the TMA box's swizzle mode (a box inside one swizzle period
# took the widest matching mode), then level 2 and 1 problems whose plans the narrow K steps and tiles changed
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 100 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py \
  tests/kernels/test_conv_transposed.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; grep -E "^E |Error|error|^FAILED|passed|failed" $OUT/tests.log | cut -c1-400 | head -40
judge() {  # level, solutions, ids, seconds, name
  timeout -k 20 -s INT $4 python3 -m argus kernelbench --problems .kbdata/kernelbench --level $1 --solutions $2 \
    --only $3 --trials 2 --reps 10 --timeout 150 --store $OUT/$5.sqlite --csv $OUT/$5.csv > $OUT/$5.log 2>&1
  echo "judge exit $?" >> $OUT/$5.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/$5.sqlite
}
judge 2 .gen23/c3l2 ${IDS2:-50,60,72,89,25,13,15,74,3} ${L2_S:-250} l2
tail -6 $OUT/l2.log
judge 1 benchmarks/results/2026-11-29-conv-level1/solutions ${IDS1:-58,71,78,81} ${L1_S:-130} l1
tail -6 $OUT/l1.log
date -u >> $OUT/env.txt
