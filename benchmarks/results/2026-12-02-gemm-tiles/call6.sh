#!/usr/bin/env bash
# device call 6 (session 43): is a row pitch that is not a multiple of 128 bytes what the products with such a K lose?
# Each shape next to the same product with K rounded up to a multiple of 64 (128 bytes of bf16), the heuristic's
# configuration and cuBLAS, interleaved (`--sweep 0`).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env6.txt 2>&1
PITCH="6000,6000,3000 6000,6000,3008 6000,6000,3072 5336,6240,5816 5336,6240,5824 13664,2600,3592 13664,2600,3648 4000,4000,4000 4000,4000,4032 3000,5000,4000 3000,5000,4032 1024,1024,1000 1024,1024,1024 656,10192,3464 656,10192,3520"
timeout -k 10 ${PITCH_S:-240} python3 benchmarks/gemm_shapes.py --shapes $PITCH --sweep 0 --budget 0.6 \
  --json $OUT/pitch.json > $OUT/pitch.txt 2>&1
echo "exit $?" >> $OUT/pitch.txt; grep -v "^compile" $OUT/pitch.txt | cut -c1-160 | tail -n 20
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env6.txt; date -u >> $OUT/env6.txt
