#!/usr/bin/env bash
# device call 2 (session 25): level 2's 72, 74, 89 (not judged since their plans changed in session 24; solutions
# generated on a CPU in session 25 with the defaults: .gen23/c3l2), then level 2's problems whose convolution takes a
# fused epilogue, generated on a CPU with FUSE_EPILOGUES = True (.gen23/fused), first half
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
judge() {  # level, solutions, ids, seconds, name
  timeout -k 20 -s INT $4 python3 -m argus kernelbench --problems .kbdata/kernelbench --level $1 --solutions $2 \
    --only $3 --trials 2 --reps 10 --timeout 300 --store $OUT/$5.sqlite --csv $OUT/$5.csv > $OUT/$5.log 2>&1
  echo "judge exit $?" >> $OUT/$5.log
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()" $OUT/$5.sqlite
  tail -5 $OUT/$5.log
}
judge 2 .gen23/c3l2 ${IDS_A:-72,74,89} ${A_S:-200} l2_stale
judge 2 .gen23/fused ${IDS_B:-1,2,4,5,7,16,19,35,46,47} ${B_S:-340} l2_fused_a
date -u >> $OUT/env.txt
