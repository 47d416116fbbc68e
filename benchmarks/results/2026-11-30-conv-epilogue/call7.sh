#!/usr/bin/env bash
# device call 7 (session 25): a transposed convolution whose phases are mostly the bias alone (level 1's 81: 16 of 25)
# fills the whole output once instead of a strided fill per phase (call 6's profile: 16 fills, 1.64 ms of 2.92):
# the transposed GPU tests, then 81 judged
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 80 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_conv_transposed.py -k gpu \
  > $OUT/tests.log 2>&1; echo "tests exit $?" >> $OUT/tests.log; tail -3 $OUT/tests.log
timeout -k 10 -s INT 90 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 \
  --solutions benchmarks/results/2026-11-29-conv-level1/solutions --only 81 --trials 2 --reps 10 --timeout 80 \
  --store $OUT/l1.sqlite --csv $OUT/l1.csv > $OUT/l1.log 2>&1; echo "judge exit $?" >> $OUT/l1.log; tail -4 $OUT/l1.log
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/l1.sqlite
date -u >> $OUT/env.txt
