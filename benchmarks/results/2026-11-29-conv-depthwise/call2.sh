#!/usr/bin/env bash
# device call 2 (after the tile choice became the cost model's): the depthwise GPU tests again, KernelBench level 1's
# depthwise problems 82-86 judged (solved on a CPU, run da7df8d37197), then the sweep with the new default tiles
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${TESTS_S:-120} python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_depthwise.py -m gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE_S:-330} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen22/solutions --store .gen22/kb.sqlite --resume da7df8d37197 --only 82,83,84,85,86 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${SWEEP_S:-100} python3 benchmarks/conv_depthwise_sweep.py --rounds 10 --json $OUT/sweep.json > $OUT/sweep.log 2>&1
echo "sweep exit $?" >> $OUT/sweep.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" .gen22/kb.sqlite
cp .gen22/kb.sqlite $OUT/kb.sqlite
