#!/usr/bin/env bash
# device call 2: the implicit kernel's GPU tests, then the rest of the level-1 convolutions judged (run 2bac9916ddf5
# in .gen21, IDS), and 76 solved again after the implicit kernel stopped taking taps off the stride's phase 0
# (run e7832c882efc in .gen21b)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${TESTS_S:-120} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_conv_implicit.py > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE_S:-400} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21/solutions --store .gen21/kb.sqlite --resume 2bac9916ddf5 --only $IDS \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT ${JUDGE76_S:-60} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21b/solutions --store .gen21b/kb.sqlite --resume e7832c882efc --only 76 \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb76.csv > $OUT/kb76.log 2>&1
echo "judge exit $?" >> $OUT/kb76.log
date -u >> $OUT/env.txt
for d in .gen21 .gen21b; do python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $d/kb.sqlite; done
tar czf $OUT/stores.tgz .gen21/kb.sqlite .gen21b/kb.sqlite
