#!/usr/bin/env bash
# device call: the level-1 solutions this session's changes touched judged
# (solved on a CPU into .gen20 by `argus kernelbench --generate --no-judge`, run 57d95fc44c1e),
# then the GPU tests of argus solve
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
IDS=${IDS:-38,39,95,94,99,100}
timeout -k 20 -s INT ${JUDGE_S:-300} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen20/solutions --store .gen20/kb.sqlite --resume 57d95fc44c1e --only $IDS \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${TESTS_S:-230} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/frontend/test_solve_gpu.py > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3; c=sqlite3.connect('.gen20/kb.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
cp .gen20/kb.sqlite $OUT/kb.sqlite
