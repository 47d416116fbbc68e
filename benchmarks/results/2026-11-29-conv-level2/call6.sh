#!/usr/bin/env bash
# device call 6: the depthwise sweep again after the kernel's staging change (columns as they are, the span aligned
# to a vector, inputs widened to f32), its GPU tests; then level 2's first solved convolution problems judged at
# their own sizes (solutions written on a CPU by run 424552acabfb of .gen22c, judged here from the files)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 100 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_depthwise.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
timeout -k 10 -s INT 90 python3 benchmarks/conv_depthwise_sweep.py --rounds 10 --json $OUT/sweep.json > $OUT/sweep.log 2>&1
echo "sweep exit $?" >> $OUT/sweep.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE_S:-330} python3 -m argus kernelbench --problems .kbdata/kernelbench --level 2 \
  --solutions .gen22c/solutions --only ${IDS:-1,2,3,4,5,6,8,10,11,13,15,16,17,19,20} --trials 2 --reps 10 --timeout 150 \
  --store $OUT/l2.sqlite --csv $OUT/l2.csv > $OUT/l2.log 2>&1
echo "judge exit $?" >> $OUT/l2.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/l2.sqlite
