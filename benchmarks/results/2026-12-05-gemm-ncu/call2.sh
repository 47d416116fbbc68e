#!/usr/bin/env bash
# device call 2 (session 58, issue #20): split slices stored through TMA (`matmul.SPLIT_TMA_STORE`) against direct
# stores (--split-direct) on the issue's bf16 suite; 512x512x65536's split plans in depth; the FP8 issue shapes with
# the model's next two configurations (split tails) and the cluster twin.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call2
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 --split-direct \
    --json $R/issue.json > $R/issue.txt 2>&1; echo "exit $?" >> $R/issue.txt
timeout -k 5 -s INT 120 python3 benchmarks/gemm_config_probe.py 512,512,65536 128,256,64,4,2,16,2,direct \
    128,128,128,3,2,8,2,tma 128,128,128,3,2,8,2,direct 128,128,64,6,2,8,2,tma 128,256,64,4,2,12,2,tma \
    --rounds 200 --kernel-only --json $R/p512.json > $R/p512.txt 2>&1; echo "exit $?" >> $R/p512.txt
timeout -k 5 -s INT 220 python3 benchmarks/gemm_fp8.py --shapes 8192,8192,28672 8192,28672,8192 4096,4096,4096 \
    8192,8192,8192 --sweep 2 --cluster --json $R/fp8.json > $R/fp8.txt 2>&1
echo "exit $?" >> $R/fp8.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
grep -h -E "geometric|exit|WRONG|Error|refused" $R/issue.txt | cut -c1-200
grep -h -E "^ +[0-9]+x" $R/issue.txt | cut -c1-170
grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG" $R/p512.txt
grep -h -v "^    " $R/fp8.txt | tail -25 | cut -c1-200
cd $OUT && tar czf call2.tgz call2 && rm -rf call2
