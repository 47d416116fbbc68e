#!/usr/bin/env bash
# device call: the GPU tests of the convolution library (strided transposed cases included), then the level-1
# convolution problems judged at KernelBench's own sizes (solved on a CPU into .gen21 by
# `argus kernelbench --generate --no-judge`, run 2bac9916ddf5; the problem ids in IDS)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
if [ -n "${TESTS:-}" ]; then
  timeout -k 10 -s INT ${TESTS_S:-120} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_conv.py > $OUT/gpu_tests.log 2>&1
  echo "pytest exit $?" >> $OUT/gpu_tests.log
  date -u >> $OUT/env.txt
fi
timeout -k 20 -s INT ${JUDGE_S:-400} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21/solutions --store .gen21/kb.sqlite --resume 2bac9916ddf5 --only $IDS \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3; c=sqlite3.connect('.gen21/kb.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
cp .gen21/kb.sqlite $OUT/kb.sqlite
