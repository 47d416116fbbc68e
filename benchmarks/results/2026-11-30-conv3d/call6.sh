#!/usr/bin/env bash
# device call 6 (session 24): level 2's 72, 74 and 89, which call 5's judge did not reach within its time
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 115 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 2 --solutions .gen23/c3l2 \
  --only 72,74,89 --trials 2 --reps 10 --timeout 100 --store $OUT/l2.sqlite --csv $OUT/l2.csv > $OUT/l2.log 2>&1
echo "judge exit $?" >> $OUT/l2.log; tail -6 $OUT/l2.log
date -u >> $OUT/env.txt
