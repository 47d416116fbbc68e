#!/usr/bin/env bash
# device call 2 (session 48, issue #20): each kernel's time in the plans of the shapes below 0.90x cuBLAS in call 1
# (the heuristic's and the model's next 8), next to cuBLAS's kernels (benchmarks/gemm_kernel_times.py).
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/call2/env.txt 2>&1
timeout -k 5 -s INT 400 python3 benchmarks/gemm_kernel_times.py --shapes 512,512,65536 1000,1000,1000 256,7168,2048 6000,6000,3000 1,4096,4096 --top 8 --rounds 20 > $OUT/call2/times.txt 2>&1
echo "exit $?" >> $OUT/call2/times.txt
cat $OUT/call2/times.txt | cut -c1-330
