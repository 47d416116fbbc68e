#!/usr/bin/env bash
# device call 2+: the judge resumed over every problem without a row yet
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
IDS=${IDS:-38,39,41,42,43,44,45,46,47,48,49,51,52,89,91,92,93,94,95,98,99,100,5,19,20,21,22,25,26,27,30,31,32,88}
timeout -k 20 -s INT ${JUDGE_S:-520} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen19/solutions --store .gen19/kb.sqlite --resume ab1d77c5bc76 --only $IDS \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
python3 -c "import sqlite3; c=sqlite3.connect('.gen19/kb.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
cp .gen19/kb.sqlite $OUT/kb.sqlite
