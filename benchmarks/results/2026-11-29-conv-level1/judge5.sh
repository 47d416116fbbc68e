#!/usr/bin/env bash
# device call 5 (after the judge's reply allowance was raised): 59 judged again (its call-2 row deleted from the
# store), then the implicit convolution's GPU tests (strided rows now on the gather path)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 20 -s INT ${JUDGE_S:-200} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21/solutions --store .gen21/kb.sqlite --resume 2bac9916ddf5 --only 59 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${TESTS_S:-150} python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_implicit.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" .gen21/kb.sqlite
cp .gen21/kb.sqlite $OUT/kb.sqlite
