#!/usr/bin/env bash
# device call 3 (session 24): the implicit kernel's narrow K steps (16 or 32 channels, implicit_bk) and output-channel
# tiles (16/32 for f32, implicit_bn) take f32 convolutions of 3 or 8 channels (until now the gather path's,
# FEW_CHANNELS, removed): the conv GPU tests, the f32 table of conv_implicit_sweep (its gather column), the 3-d sweep's
# few-channel rows, then level 2's 2-d few-channel problems judged (solutions: .gen23/c3l2, planned when they run)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 120 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py \
  tests/kernels/test_conv_transposed.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; tail -2 $OUT/tests.log
timeout -k 10 90 python3 benchmarks/conv_implicit_sweep.py --only-f32 --rounds 10 --json $OUT/f32.json > $OUT/f32.log 2>&1
echo "f32 exit $?" >> $OUT/f32.log; grep "^| \(KB\|L2\)" $OUT/f32.log
timeout -k 10 150 python3 benchmarks/conv3d_sweep.py --rounds 8 --json $OUT/conv3d.json \
  --only L1/54,L1/59,L1/60,L1/66,L2/6_,L2/7_,L2/8_,L2/23,L2/24,L2/27,L2/48,L2/90,L2/96 > $OUT/conv3d.log 2>&1
echo "conv3d exit $?" >> $OUT/conv3d.log; grep "^| L" $OUT/conv3d.log
judge() {  # level, solutions, ids, seconds, name
  timeout -k 20 -s INT $4 python3 -m argus kernelbench --problems .kbdata/kernelbench --level $1 --solutions $2 \
    --only $3 --trials 2 --reps 10 --timeout 150 --store $OUT/$5.sqlite --csv $OUT/$5.csv > $OUT/$5.log 2>&1
  echo "judge exit $?" >> $OUT/$5.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/$5.sqlite
}
judge 2 .gen23/c3l2 ${IDS2:-21,57,65,67,73,82,85,87} ${L2_S:-200} l2
tail -6 $OUT/l2.log
date -u >> $OUT/env.txt
