#!/usr/bin/env bash
# device calls 2+: judge both halves of level 1's 39 problems at once, half a on GPU 0 and half b on GPU 1, each
# resumed from its store (a problem with a row already is not judged again); stopped by SIGINT before the limit
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
A=5,19,20,21,22,25,26,27,30,31,32,23,24,88,94,95,98,99,100
B=33,34,35,38,39,41,42,43,44,45,46,47,48,49,51,52,89,91,92,93
judge() {  # half, gpu, run id, problem ids
  CUDA_VISIBLE_DEVICES=$2 timeout -k 20 -s INT ${JUDGE_S:-300} python3 -m argus kernelbench --generate \
    --problems .kbdata/kernelbench --level 1 --solutions .gen29/$1/solutions --store .gen29/$1/kb.sqlite \
    --resume $3 --only $4 --trials 2 --reps 10 --timeout 150 --csv $OUT/kb-$1.csv > $OUT/kb-$1.log 2>&1
  echo "judge exit $?" >> $OUT/kb-$1.log
  python3 -c "import sqlite3; c=sqlite3.connect('.gen29/$1/kb.sqlite'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
}
judge a 0 cd245654b4ef $A &
judge b 1 052459bbafa3 $B &
wait
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
tar -czf $OUT/stores.tgz .gen29/a/kb.sqlite .gen29/b/kb.sqlite
tail -n 4 $OUT/kb-a.log; tail -n 4 $OUT/kb-b.log
