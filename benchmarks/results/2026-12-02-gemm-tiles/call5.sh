#!/usr/bin/env bash
# device call 5 (session 43): call 3's few-column products again with the planner as committed (tiles narrowed to N
# in steps of 32, or 8 where one column tile holds N; the refitted efficiencies), against the planner at the
# session's start (`--previous-tiles`) and without the narrowed tiles (`--unfitted`), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env5.txt 2>&1
NARROW="3488,272,2216 3205,392,3672 8000,320,4096 4096,640,4096 2048,96,8192 16384,200,1024 12000,136,2048 6000,456,3000 9000,600,1200 30000,72,4096 7000,520,2048 5000,1200,1500,TN 4096,1000,4096 20000,336,1536"
timeout -k 10 ${NARROW_S:-300} python3 benchmarks/gemm_shapes.py --shapes $NARROW --sweep 1 --budget 0.4 --unfitted \
  --previous-tiles --json $OUT/narrow5.json > $OUT/narrow5.txt 2>&1
echo "exit $?" >> $OUT/narrow5.txt; grep -v "^compile" $OUT/narrow5.txt | grep -v "^    " | cut -c1-200 | tail -n 24
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env5.txt; date -u >> $OUT/env5.txt
