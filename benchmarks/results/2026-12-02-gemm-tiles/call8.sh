#!/usr/bin/env bash
# device call 8 (session 43): copies to whole row pitches by the `pad_copy` DSL kernel (launches of the plan, timed
# with it): the heuristic against its choice without the copies (`--unpitched`) on call 7's shapes, and the products
# whose operands TMA cannot address at all (their copies now `pad_copy` launches too), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env8.txt 2>&1
PITCH="6000,6000,3000 5336,6240,5816 13664,2600,3592 656,10192,3464 1024,1024,1000 3000,3000,3000,NN 3000,3000,3000,TN 4000,12000,1800 2000,2000,6000 16384,4096,1500,NN 2049,3071,4097 8205,5921,2949 777,1999,3001 2500,10000,1500 4096,4096,4096 64,8192,3000"
timeout -k 10 ${PITCH_S:-300} python3 benchmarks/gemm_shapes.py --shapes $PITCH --sweep 0 --budget 0.6 --unpitched \
  --json $OUT/pitch8.json > $OUT/pitch8.txt 2>&1
echo "exit $?" >> $OUT/pitch8.txt; grep -v "^compile" $OUT/pitch8.txt | cut -c1-220 | tail -n 40
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env8.txt; date -u >> $OUT/env8.txt
