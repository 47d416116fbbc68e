#!/usr/bin/env bash
# device call 1 (session 60, issue #20): split-K with the reduction in the GEMM kernel (`gemm_split_fused`, group
# barriers per tile) against the heuristic's two-launch split plans and cuBLAS, interleaved, every contender checked
# against the f32 product before and after its timed relaunches.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call1
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 170 python3 benchmarks/gemm_config_probe.py"
run() { local name=$1; shift; $P "$@" --json $R/$name.json > $R/$name.txt 2>&1; echo "exit $?" >> $R/$name.txt
        grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/$name.txt; }
run t512 512,512,65536 128,256,64,4,2,16,2,tma,fused 128,256,64,4,2,16,2,direct,fused 128,128,64,6,2,8,2,tma \
    128,128,64,6,2,8,2,tma,fused 128,128,64,6,2,8,2,direct,fused --rounds 150
run t1024 1024,1024,16384 128,256,64,4,2,4,1,tma,fused 128,256,64,4,2,8,1,tma,fused 128,256,64,4,2,8,2,tma,fused \
    --rounds 150
run t384 384,384,49152 128,192,64,4,2,16,1,tma,fused 128,192,64,4,2,8,1,tma,fused --rounds 150
run t1000 1000,1000,20000 128,256,64,4,2,4,1,tma,fused --rounds 150
run t128 128,4096,4096 64,128,128,4,1,2,1,tma,fused --rounds 150
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call1.tgz call1 && rm -rf call1
