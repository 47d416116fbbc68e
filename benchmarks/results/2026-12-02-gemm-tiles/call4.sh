#!/usr/bin/env bash
# device call 4 (session 43): the planner as committed at the end of the session (8 tile shapes, tiles narrowed to N,
# the efficiencies refitted to calls 2-3 and the recorded rows) against the planner at the session's start
# (`--previous-tiles`: `previous_choice`) and without the narrowed tiles (`--unfitted`). (a) 24 shapes drawn at
# random (seed 2026; a third with N down to 64; nothing fitted on them); (b) every earlier suite (issue, table,
# heldout, mid, layouts). Interleaved with cuBLAS in one process per part.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env4.txt 2>&1
RANDOM_SHAPES="420,1032,2144 647,3112,2584 5336,6240,5816 3288,118,7640 4416,4318,608 1048,2600,856 4783,1568,280 1480,1344,2920 2096,5796,3104 744,656,12048 10232,392,3400 656,10192,3464 12216,15263,2472 920,7125,2064 1544,870,776 3064,812,2248 755,1928,2144 2600,11141,8120 384,2920,6696 775,2032,376 361,6949,712 13664,2600,3592 2888,6282,13304 448,646,2952"
timeout -k 10 ${RANDOM_S:-220} python3 benchmarks/gemm_shapes.py --shapes $RANDOM_SHAPES --sweep 1 --budget 0.4 \
  --previous-tiles --unfitted --json $OUT/random2.json > $OUT/random2.txt 2>&1
echo "exit $?" >> $OUT/random2.txt; grep -v "^compile" $OUT/random2.txt | grep -v "^    " | cut -c1-200 | tail -n 30
timeout -k 10 ${ALL_S:-300} python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.4 --previous-tiles \
  --json $OUT/all4.json > $OUT/all4.txt 2>&1
echo "exit $?" >> $OUT/all4.txt; grep -v "^compile" $OUT/all4.txt | grep -v "^    " | cut -c1-200 | tail -n 80
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env4.txt; date -u >> $OUT/env4.txt
