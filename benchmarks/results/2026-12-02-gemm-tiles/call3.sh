#!/usr/bin/env bash
# device call 3 (session 43): tiles narrowed to N (`matmul.fitted_tiles`) where the last column tile would be mostly
# empty. Products with few columns (N = 72 to 1200, most not a multiple of a tile; the two from call 2's random draw
# that lost, the others new): the heuristic against its choice without the narrowed tiles (`--unfitted`) and every
# tile shape's first candidate, interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env3.txt 2>&1
NARROW="3488,272,2216 3205,392,3672 8000,320,4096 4096,640,4096 2048,96,8192 16384,200,1024 12000,136,2048 6000,456,3000 9000,600,1200 30000,72,4096 7000,520,2048 5000,1200,1500,TN 4096,1000,4096 20000,336,1536"
timeout -k 10 ${NARROW_S:-420} python3 benchmarks/gemm_shapes.py --shapes $NARROW --sweep 1 --budget 0.4 --unfitted \
  --every-tile --json $OUT/narrow.json > $OUT/narrow.txt 2>&1
echo "exit $?" >> $OUT/narrow.txt; grep -v "^compile" $OUT/narrow.txt | cut -c1-300 | tail -n 40
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env3.txt; date -u >> $OUT/env3.txt
