#!/usr/bin/env bash
# device call 6 (session 54, issue #20): 512x512x65536, the last row of the suite below 0.90x cuBLAS, with
# configurations the planner does not offer (cuBLAS's 128x128x64 in 6 stages) and other split counts, in clusters
# and not, interleaved with cuBLAS and the heuristic's plan.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call6
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call6/env.txt
date -u >> $OUT/call6/env.txt
timeout -k 5 -s INT 300 python3 benchmarks/gemm_config_probe.py 512,512,65536 128,128,64,6,2,8,2 128,128,64,6,2,16,2 \
    128,128,64,6,2,8,1 128,256,64,4,2,8,2 128,256,64,4,2,32,2 128,128,128,3,2,16,2 64,256,64,5,1,16,2 \
    128,128,64,6,2,4,2 --rounds 150 --json $OUT/call6/deep.json > $OUT/call6/deep.txt 2>&1
echo "exit $?" >> $OUT/call6/deep.txt
timeout -k 5 -s INT 200 python3 benchmarks/gemm_config_probe.py 256,256,131072 128,128,64,6,2,8,2 128,128,64,6,2,16,2 \
    128,256,64,4,2,16,2 64,256,64,5,1,16,2 --rounds 150 --json $OUT/call6/deep256.json > $OUT/call6/deep256.txt 2>&1
echo "exit $?" >> $OUT/call6/deep256.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/call6/env.txt
cat $OUT/call6/deep.txt $OUT/call6/deep256.txt | grep -v "^GPU\|^torch\|^nvidia\|^NVRTC"
