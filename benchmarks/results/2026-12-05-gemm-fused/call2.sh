#!/usr/bin/env bash
# device call 2 (session 60, issue #20): the fused split-K reduction (`GemmConfig.FUSE`, `gemm_split_fused`) against
# the heuristic's own two-launch split plan at the same configuration, interleaved with cuBLAS, at the split shapes of
# the suites and ten drawn at random (seed 7) where the twin may be fused; every contender checked against the
# f32 product before and after its timed relaunches. Call 1 ran before a fix (the heuristic's split plans failed to
# trace there: the fused branch had broken the store's if/elif chain).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call2
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 170 python3 benchmarks/gemm_config_probe.py"
run() { local name=$1; shift; $P "$@" --json $R/$name.json > $R/$name.txt 2>&1; echo "exit $?" >> $R/$name.txt
        grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/$name.txt; }
timeout 300 python3 benchmarks/gemm_precompile.py 512,512,65536 512,512,65536:128,256,64,4,2,16,2,tma,fused 512,512,65536:128,128,64,6,2,8,2,tma,fused 512,512,65536:128,128,64,6,2,8,2,tma 1024,1024,16384 1024,1024,16384:128,256,64,4,2,4,1,tma,fused 128,4096,4096 128,4096,4096:64,128,128,4,1,2,1,tma,fused 1000,1000,20000 1000,1000,20000:128,256,64,4,2,4,1,tma,fused 934,256,10864 934,256,10864:64,256,64,5,1,8,1,tma,fused 241,248,16960 241,248,16960:64,128,128,4,1,16,2,tma,fused 766,1084,20160 766,1084,20160:128,224,64,4,2,4,1,tma,fused 359,808,22336 359,808,22336:128,192,64,4,2,8,1,tma,fused 736,1008,62912 736,1008,62912:192,128,64,4,3,4,1,tma,fused 1624,116,38016 1624,116,38016:128,128,128,3,2,8,1,tma,fused 404,168,15152 404,168,15152:64,256,64,5,1,16,2,tma,fused 303,1844,34496 303,1844,34496:128,192,64,4,2,4,1,tma,fused 1956,648,15488 1956,648,15488:128,192,64,4,2,2,1,tma,fused 83,880,964 83,880,964:64,64,128,6,1,4,1,tma,fused > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
run f512_512_65536 512,512,65536 128,256,64,4,2,16,2,tma,fused 128,128,64,6,2,8,2,tma,fused 128,128,64,6,2,8,2,tma --rounds 100
run f1024_1024_16384 1024,1024,16384 128,256,64,4,2,4,1,tma,fused --rounds 100
run f128_4096_4096 128,4096,4096 64,128,128,4,1,2,1,tma,fused --rounds 100
run f1000_1000_20000 1000,1000,20000 128,256,64,4,2,4,1,tma,fused --rounds 100
run f934_256_10864 934,256,10864 64,256,64,5,1,8,1,tma,fused --rounds 100
run f241_248_16960 241,248,16960 64,128,128,4,1,16,2,tma,fused --rounds 100
run f766_1084_20160 766,1084,20160 128,224,64,4,2,4,1,tma,fused --rounds 100
run f359_808_22336 359,808,22336 128,192,64,4,2,8,1,tma,fused --rounds 100
run f736_1008_62912 736,1008,62912 192,128,64,4,3,4,1,tma,fused --rounds 100
run f1624_116_38016 1624,116,38016 128,128,128,3,2,8,1,tma,fused --rounds 100
run f404_168_15152 404,168,15152 64,256,64,5,1,16,2,tma,fused --rounds 100
run f303_1844_34496 303,1844,34496 128,192,64,4,2,4,1,tma,fused --rounds 100
run f1956_648_15488 1956,648,15488 128,192,64,4,2,2,1,tma,fused --rounds 100
run f83_880_964 83,880,964 64,64,128,6,1,4,1,tma,fused --rounds 100
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call2.tgz call2 && rm -rf call2
