#!/usr/bin/env bash
# device call 4 (after 64-bit global offsets in the code generator): 83 probed launch by launch at its own batch,
# then judged (its call-2 row, a fault, deleted from the store); the GPU tests of the kernels whose generated code
# the change touched (convolution, the GEMM library, attention)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
CUDA_LAUNCH_BLOCKING=1 timeout 90 python3 benchmarks/results/2026-11-29-conv-level1/probe83.py 64 > $OUT/probe83.log 2>&1; echo "exit $?" >> $OUT/probe83.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE_S:-150} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21/solutions --store .gen21/kb.sqlite --resume 2bac9916ddf5 --only 83 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${TESTS_S:-200} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_conv.py tests/kernels/test_gemm_matmul.py tests/kernels/test_sdpa.py > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" .gen21/kb.sqlite
cp .gen21/kb.sqlite $OUT/kb.sqlite
