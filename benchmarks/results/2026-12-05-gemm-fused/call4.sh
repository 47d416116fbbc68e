#!/usr/bin/env bash
# device call 4 (session 60, issue #20): the plan as committed (split plans fused where they can be) on the issue's
# opening table, the held-out shapes and the mid-size shapes (benchmarks/gemm_shapes.py), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call4
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout 240 python3 benchmarks/gemm_precompile.py 24,5120,13824 200,3072,768 768,768,3072 3072,1536,6144 777,1999,3001 12000,512,1024 48,1024,65536 2500,10000,1500 5120,5120,640 160,12288,1536 40,40,40 1024,1024,16384 128,4096,4096 64,8192,8192 256,7168,2048 3000,5000,4000 4000,4000,4000 6144,5120,3072 12288,12288,12288 1536,1536,1536 3072,3072,768 20480,256,4096 6000,6000,3000 2304,2304,2304 2816,5632,1408 1792,3584,1024 3584,1536,4096 768,6144,2048 10240,1280,2560 2560,2560,5120 1280,1280,8192 12288,3072,1536 3000,5000,4000 6144,5120,3072 4000,4000,4000 4096,4096,4096 8192,8192,8192 > $R/precompile.txt 2>&1; tail -1 $R/precompile.txt
for suite in table heldout mid; do
  timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --suite $suite --sweep 0 --json $R/$suite.json > $R/$suite.txt 2>&1
  echo "exit $?" >> $R/$suite.txt
  grep -h -E "geometric|exit|WRONG|Error|refused|fused" $R/$suite.txt | cut -c1-200
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call4.tgz call4 && rm -rf call4
