#!/usr/bin/env bash
# device call 3 (session 60, issue #20): the fused split-K as committed (counters by tile number, the one-wave and
# counter-count assumptions checked at each launch, the unit guard by tile number; verified on the CPU), which every
# split plan now takes where `fuse_refusal` allows: each fused heuristic against its own configuration's two-launch
# form (FUSE=False) and cuBLAS, interleaved, checked before and after the timed relaunches; then the issue's bf16
# suite with the plan as committed.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
C=${CALL:-call3}  # call 6 runs it again on an H200 as call6
R=$OUT/$C
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 120 python3 benchmarks/gemm_config_probe.py"
run() { local name=$1; shift; $P "$@" --json $R/$name.json > $R/$name.txt 2>&1; echo "exit $?" >> $R/$name.txt
        grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/$name.txt; }
timeout 300 python3 benchmarks/gemm_precompile.py 512,512,65536 512,512,65536:128,256,64,4,2,16,2,tma 512,512,65536:128,128,64,6,2,8,2,tma,fused 1024,1024,16384 1024,1024,16384:128,256,64,4,2,4,1,tma 128,4096,4096 128,4096,4096:64,128,128,4,1,2,1,tma 1000,1000,20000 1000,1000,20000:128,256,64,4,2,4,1,tma 934,256,10864 934,256,10864:64,256,64,5,1,8,1,tma 241,248,16960 241,248,16960:64,128,128,4,1,16,2,tma 766,1084,20160 766,1084,20160:128,224,64,4,2,4,1,tma 359,808,22336 359,808,22336:128,192,64,4,2,8,1,tma 736,1008,62912 736,1008,62912:192,128,64,4,3,4,1,tma 1624,116,38016 1624,116,38016:128,128,128,3,2,8,1,tma 404,168,15152 404,168,15152:64,256,64,5,1,16,2,tma 303,1844,34496 303,1844,34496:128,192,64,4,2,4,1,tma 1956,648,15488 1956,648,15488:128,192,64,4,2,2,1,tma 83,880,964 83,880,964:64,64,128,6,1,4,1,tma 2048,2048,2048 4096,4096,4096 8192,8192,8192 8192,7168,2048 4096,14336,4096 16384,4096,4096 2048,8192,28672 1024,1024,1024 16384,16384,16384 32,4096,14336 96,7168,7168 2048,2048,32768 512,512,65536 1000,1000,1000 2049,3071,4097 8205,5921,2949 4096,6144,4096 8192,28672,8192 6000,6000,3000 > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
run f512_512_65536 512,512,65536 128,256,64,4,2,16,2,tma 128,128,64,6,2,8,2,tma,fused --rounds 100
run f1024_1024_16384 1024,1024,16384 128,256,64,4,2,4,1,tma --rounds 100
run f128_4096_4096 128,4096,4096 64,128,128,4,1,2,1,tma --rounds 100
run f1000_1000_20000 1000,1000,20000 128,256,64,4,2,4,1,tma --rounds 100
run f934_256_10864 934,256,10864 64,256,64,5,1,8,1,tma --rounds 100
run f241_248_16960 241,248,16960 64,128,128,4,1,16,2,tma --rounds 100
run f766_1084_20160 766,1084,20160 128,224,64,4,2,4,1,tma --rounds 100
run f359_808_22336 359,808,22336 128,192,64,4,2,8,1,tma --rounds 100
run f736_1008_62912 736,1008,62912 192,128,64,4,3,4,1,tma --rounds 100
run f1624_116_38016 1624,116,38016 128,128,128,3,2,8,1,tma --rounds 100
run f404_168_15152 404,168,15152 64,256,64,5,1,16,2,tma --rounds 100
run f303_1844_34496 303,1844,34496 128,192,64,4,2,4,1,tma --rounds 100
run f1956_648_15488 1956,648,15488 128,192,64,4,2,2,1,tma --rounds 100
run f83_880_964 83,880,964 64,64,128,6,1,4,1,tma --rounds 100
for suite in issue; do
  timeout -k 5 -s INT 170 python3 benchmarks/gemm_shapes.py --suite $suite --sweep 0 --json $R/$suite.json > $R/$suite.txt 2>&1
  echo "exit $?" >> $R/$suite.txt
  grep -h -E "geometric|exit|WRONG|Error|refused|fused" $R/$suite.txt | cut -c1-200
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf $C.tgz $C && rm -rf $C
