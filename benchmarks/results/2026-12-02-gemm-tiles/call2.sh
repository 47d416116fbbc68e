#!/usr/bin/env bash
# device call 2 (session 43): after call 1, the tile efficiencies fitted (MMA_EFFICIENCY) and the split tail's
# reduction at 192 columns fixed. (a) twenty shapes drawn at random (seed 4343, log-uniform extents in [256, 16384],
# 2 to 2000 GFLOP; none used to fit anything): the heuristic against its choice among the previous tiles and
# cuBLAS; (b) the mid-size suite again with every tile shape's first candidate.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env2.txt 2>&1
RANDOM_SHAPES="784,5200,5208 3488,272,2216 4920,3612,696 5152,4864,3152 3205,392,3672 432,1536,4232 1760,2908,6640 1776,3088,688 2224,11232,816 9903,3280,760 4456,1568,8144 5056,517,2088 720,10368,15904 3664,13736,1936 368,8567,10464 2440,789,9272 9608,2416,368 7896,952,3216 1068,256,6080 264,7888,1136"
timeout -k 10 ${RANDOM_S:-200} python3 benchmarks/gemm_shapes.py --shapes $RANDOM_SHAPES --sweep 1 --budget 0.4 \
  --previous-tiles --json $OUT/random.json > $OUT/random.txt 2>&1
echo "exit $?" >> $OUT/random.txt; grep -v "^compile" $OUT/random.txt | cut -c1-200 | tail -n 46
timeout -k 10 ${MID_S:-280} python3 benchmarks/gemm_shapes.py --suite mid --sweep 2 --budget 0.4 --every-tile \
  --previous-tiles --json $OUT/mid2.json > $OUT/mid2.txt 2>&1
echo "exit $?" >> $OUT/mid2.txt; grep -v "^compile" $OUT/mid2.txt | cut -c1-200 | tail -n 42
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env2.txt; date -u >> $OUT/env2.txt
