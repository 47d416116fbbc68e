#!/usr/bin/env bash
# device call 7 (session 43): copies to whole row pitches (`GemmConfig.PITCH`) where an operand's rows are 16 but not
# 64 bytes apart: the heuristic (which copies where its model says the copy pays) against its choice without the
# copies (`--unpitched`), every padded plan timed with its copies (`timed_call`: the first run that does), and the
# products whose operands TMA cannot address at all (copied anyway) timed with their copies for the first time.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env7.txt 2>&1
PITCH="6000,6000,3000 5336,6240,5816 13664,2600,3592 656,10192,3464 1024,1024,1000 3000,3000,3000,NN 3000,3000,3000,TN 8192,8192,2500 4000,12000,1800 2000,2000,6000 16384,4096,1500,NN 2049,3071,4097 8205,5921,2949 777,1999,3001 2500,10000,1500"
timeout -k 10 ${PITCH_S:-300} python3 benchmarks/gemm_shapes.py --shapes $PITCH --sweep 0 --budget 0.6 --unpitched \
  --json $OUT/pitch7.json > $OUT/pitch7.txt 2>&1
echo "exit $?" >> $OUT/pitch7.txt; grep -v "^compile" $OUT/pitch7.txt | cut -c1-200 | tail -n 34
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env7.txt; date -u >> $OUT/env7.txt
