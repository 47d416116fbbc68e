#!/usr/bin/env bash
# device call 1 (session 61, issue #20): split-K products bound by L2 traffic. Does a 128x128 tile in 2-block clusters
# (B shared by a multicast) with fewer splits, summed in the kernel (fused), beat the heuristic's plan at shapes other
# than 512x512x65536 (where it ran 0.917-0.944x cuBLAS against the plan's 0.896-0.918 in session 60)? Each shape: the
# heuristic's plan, 128x128 at BK 64 (6 stages) and 128 (3 stages) in clusters at one or two split counts, and the
# 128x256 / 64x256 forms; every contender checked against the f32 product before and after its timed relaunches,
# interleaved with cuBLAS. Then the splits fused since this session (`GemmConfig.reducers`) against their two launches.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
C=${CALL:-call1}
R=$OUT/$C
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 150 python3 benchmarks/gemm_config_probe.py"
run() { local name=$1; shift; $P "$@" --json $R/$name.json > $R/$name.txt 2>&1; echo "exit $?" >> $R/$name.txt
        grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/$name.txt; }
declare -A CONF
CONF[512,512,65536]="128,256,64,4,2,16,2,tma,fused 128,128,64,6,2,8,2,tma,fused 128,128,128,3,2,8,2,tma,fused 128,128,64,6,2,4,2,tma,fused 128,256,64,4,2,8,2,tma,fused"
CONF[256,256,131072]="128,128,128,3,2,32,2,tma 128,128,64,6,2,16,2,tma,fused 128,128,128,3,2,16,2,tma,fused 128,128,64,6,2,32,2,tma"
CONF[512,512,32768]="64,256,64,5,1,8,1,tma,fused 128,128,64,6,2,8,2,tma,fused 128,128,128,3,2,8,2,tma,fused 128,256,64,4,2,16,2,tma,fused 128,128,64,6,2,4,2,tma,fused"
CONF[256,512,65536]="64,256,64,5,1,16,2,tma,fused 128,128,64,6,2,16,2,tma,fused 128,128,128,3,2,16,2,tma,fused 128,256,64,4,2,32,2,tma,fused 128,128,64,6,2,8,2,tma,fused"
CONF[1024,512,49152]="128,256,64,4,2,8,1,tma,fused 128,256,64,4,2,8,2,tma,fused 128,128,64,6,2,4,2,tma,fused 128,128,128,3,2,4,2,tma,fused"
CONF[1024,1024,16384]="128,256,64,4,2,4,1,tma,fused 128,256,64,4,2,4,2,tma,fused 128,128,64,6,2,2,2,tma,fused 128,128,128,3,2,2,2,tma,fused"
CONF[768,512,65536]="128,256,64,4,2,8,1,tma,fused 128,256,64,4,2,8,2,tma,fused 128,128,64,6,2,4,2,tma,fused 128,128,64,6,2,4,1,tma,fused"
CONF[768,768,3072]="64,256,64,5,1,3,1,tma,fused 64,256,64,5,1,3,1,tma"
CONF[198,2212,61440]="128,256,64,4,2,6,1,tma,fused 128,256,64,4,2,6,1,tma"
CONF[1472,684,31680]="128,256,64,4,2,3,1,tma,fused 128,256,64,4,2,3,1,tma"
CONF[640,384,65536]="128,192,64,4,2,12,1,tma,fused 128,192,64,4,2,12,1,tma"
CONF[384,768,40960]="128,256,64,4,2,12,1,tma,fused 128,256,64,4,2,12,1,tma"
CONF[384,384,49152]="128,192,64,4,2,16,1,tma,fused 128,192,64,4,2,16,1,tma"
A="512,512,65536 256,256,131072 512,512,32768 256,512,65536 1024,512,49152 1024,1024,16384 768,512,65536"
# since this session `gemm_split_fused` also takes splits that do not divide BM (`GemmConfig.reducers`): the
# heuristic's configuration fused that way against its two launches (the explicit configuration, FUSE False); the
# plan takes the fused form only with `matmul.FUSE_PARTIAL` on, until this is measured
B="768,768,3072 198,2212,61440 1472,684,31680 640,384,65536 384,768,40960 384,384,49152"
# SET=a (call 1) or b (call 2: CALL=call2 SET=b)
if [ "${SET:-a}" = a ]; then SHAPES=$A; else SHAPES=$B; fi
jobs=""
for s in $SHAPES; do jobs="$jobs $s"; for c in ${CONF[$s]}; do jobs="$jobs $s:$c"; done; done
timeout 300 python3 benchmarks/gemm_precompile.py $jobs --jobs 16 > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
for s in $SHAPES; do run s${s//,/_} $s ${CONF[$s]} --rounds 100; done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf $C.tgz $C && rm -rf $C
