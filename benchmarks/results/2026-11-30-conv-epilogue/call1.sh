#!/usr/bin/env bash
# device call 1 (session 25): the convolution GPU tests never run on a GPU (the fused epilogue, the grouped phases),
# then level 1's 73 (solved on a CPU in session 24) and level 1's 72, 75 with GROUPED_PHASES = True (set in this
# call's copy of the tree only: the committed value is False)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_conv_epilogue.py \
  tests/kernels/test_conv_transposed.py tests/kernels/test_conv_implicit.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; grep -E "^E |Error|error|^FAILED|passed|failed" $OUT/tests.log | cut -c1-400 | head -40
judge() {  # level, solutions, ids, seconds, name
  timeout -k 20 -s INT $4 python3 -m argus kernelbench --problems .kbdata/kernelbench --level $1 --solutions $2 \
    --only $3 --trials 2 --reps 10 --timeout 200 --store $OUT/$5.sqlite --csv $OUT/$5.csv > $OUT/$5.log 2>&1
  echo "judge exit $?" >> $OUT/$5.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/$5.sqlite
  tail -5 $OUT/$5.log
}
judge 1 benchmarks/results/2026-11-30-conv3d/solutions 73 ${L1A_S:-120} l1_73
sed -i 's/^GROUPED_PHASES = False/GROUPED_PHASES = True/' src/argus/kernels/conv.py && grep -n "^GROUPED_PHASES" src/argus/kernels/conv.py
judge 1 benchmarks/results/2026-11-29-conv-level1/solutions 72,75 ${L1B_S:-200} l1_grouped
date -u >> $OUT/env.txt
