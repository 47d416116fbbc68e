#!/usr/bin/env bash
# device call 1 (session 55, issue #20): where the time of the two rows below 0.90x goes. 512x512x65536 at cuBLAS's
# decomposition (128x128x64 s6, split 8, 2-block clusters) and its neighbours, each split plan also with its GEMM
# kernel alone (--kernel-only: the reduction's share); one-row GEMVs with fewer rows per block and no split (one
# launch) against the plan's split7 + reduction; cuBLAS's kernels for each (--profile); FP8 in clusters (A/B);
# and the layout family's copy kernels (session 55, argus solve's data movement) against PyTorch's copies.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call1
mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $R/env.txt
date -u >> $R/env.txt
P="timeout -k 5 -s INT 140 python3 benchmarks/gemm_config_probe.py"
PART=${1:-ab}   # a: the GEMM probes; b: FP8 and the layout copies (one device call each: 600 s a call)
if [[ $PART == *a* ]]; then
$P 512,512,65536 128,128,64,6,2,8,2 128,128,64,6,2,16,2 128,128,64,6,2,8,1 128,256,64,4,2,8,2 \
    128,256,64,4,2,32,2 128,128,128,3,2,16,2 128,128,64,6,2,4,2 --rounds 120 --kernel-only --profile \
    --json $R/p512.json > $R/p512.txt 2>&1; echo "exit $?" >> $R/p512.txt
$P 1,4096,4096 gemv:64,4,256,8,1,1 gemv:32,16,256,8,1,1 gemv:16,16,128,8,1,1 gemv:16,32,128,8,1,1 \
    gemv:32,8,256,8,1,2 gemv:32,16,256,8,1,2 gemv:64,8,512,8,1,2 gemv:64,4,256,8,1,4 gemv:64,8,256,8,1,7 \
    --rounds 200 --kernel-only --profile --json $R/gemv4096.json > $R/gemv4096.txt 2>&1; echo "exit $?" >> $R/gemv4096.txt
$P 1,8192,8192 gemv:64,16,256,8,1,1 gemv:32,16,256,8,1,1 gemv:32,16,256,8,1,2 gemv:64,8,256,8,1,2 \
    --rounds 150 --kernel-only --profile --json $R/gemv8192.json > $R/gemv8192.txt 2>&1; echo "exit $?" >> $R/gemv8192.txt
$P 1,14336,4096 gemv:64,16,256,8,1,1 gemv:32,16,256,8,1,1 gemv:64,8,256,8,1,1 \
    --rounds 150 --kernel-only --profile --json $R/gemv14336.json > $R/gemv14336.txt 2>&1; echo "exit $?" >> $R/gemv14336.txt
fi
if [[ $PART == *b* ]]; then
timeout -k 5 -s INT 200 python3 benchmarks/gemm_fp8.py --sweep 0 --cluster > $R/fp8.txt 2>&1; echo "exit $?" >> $R/fp8.txt
timeout -k 5 -s INT 240 python3 benchmarks/layout_bench.py --rounds 30 --json $R/layout.json > $R/layout.txt 2>&1; echo "exit $?" >> $R/layout.txt
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
grep -h -v "^    " $R/*.txt | grep -E "x cuBLAS|us|exit|cuBLAS kernel|WRONG|refused|geometric|Error|^\|" | cut -c1-200 | head -150
cd $OUT && tar czf call1$PART.tgz call1 && rm -rf call1
