#!/usr/bin/env bash
# device call 5 (session 60, issue #20): split plans the heuristic cannot fuse (a split count that does not divide the
# tile's rows: 3, 6) against the fusable configurations the model ranks next (fused), interleaved with cuBLAS, each
# checked before and after its timed relaunches: does a fused split of another count beat an unfused one? (What
# decides whether the model should count the fusion.)
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call5
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 100 python3 benchmarks/gemm_config_probe.py"
run() { local name=$1; shift; $P "$@" --json $R/$name.json > $R/$name.txt 2>&1; echo "exit $?" >> $R/$name.txt
        grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/$name.txt; }
J="768,768,3072:64,256,64,5,1,2,1,tma,fused 768,768,3072:128,192,64,4,2,4,1,tma,fused 768,768,3072:192,128,64,4,3,4,1,tma,fused"
J="$J 198,2212,61440:128,192,64,4,2,4,1,tma,fused 198,2212,61440:128,256,64,4,2,4,1,tma,fused"
J="$J 1472,684,31680:192,192,64,3,3,4,1,tma,fused 1472,684,31680:128,256,64,4,2,2,1,tma,fused"
J="$J 156,3032,2756:64,256,64,5,1,2,1,tma,fused 120,596,2452:64,128,128,4,1,8,1,tma,fused"
timeout 200 python3 benchmarks/gemm_precompile.py 768,768,3072 198,2212,61440 1472,684,31680 156,3032,2756 120,596,2452 \
    $J > $R/precompile.txt 2>&1; tail -1 $R/precompile.txt
run s768 768,768,3072 64,256,64,5,1,2,1,tma,fused 128,192,64,4,2,4,1,tma,fused 192,128,64,4,3,4,1,tma,fused --rounds 100
run s198 198,2212,61440 128,192,64,4,2,4,1,tma,fused 128,256,64,4,2,4,1,tma,fused --rounds 60
run s1472 1472,684,31680 192,192,64,3,3,4,1,tma,fused 128,256,64,4,2,2,1,tma,fused --rounds 60
run s156 156,3032,2756 64,256,64,5,1,2,1,tma,fused --rounds 100
run s120 120,596,2452 64,128,128,4,1,8,1,tma,fused --rounds 100
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call5.tgz call5 && rm -rf call5
