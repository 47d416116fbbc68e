#!/usr/bin/env bash
# device call 4 (session 63, issue #20): 2-block clusters at 8-15 splits (`CLUSTER_MIN_SPLITS` is 16). Ten shapes
# drawn at random (seed 63) whose plan splits K 8-15 ways unclustered where a cluster is allowed, plus two seen in
# call 1 (1024x512x49152, 768x512x65536's neighbour): each plan against the same configuration with CLUSTER=2,
# interleaved with cuBLAS, checked against the f32 product before and after.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call4
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 60 python3 benchmarks/gemm_config_probe.py"
ROWS="192,1536,49152:128,192,64,4,2,8,1,tma:128,192,64,4,2,8,2,tma
512,128,12288:64,128,128,4,1,12,1,tma:64,128,128,4,1,12,2,tma
512,128,8192:64,64,128,6,1,8,1,tma:64,64,128,6,1,8,2,tma
384,256,8192:64,128,128,4,1,8,1,tma:64,128,128,4,1,8,2,tma
128,1024,32768:64,128,128,4,1,8,1,tma:64,128,128,4,1,8,2,tma
128,1024,8192:64,128,128,4,1,8,1,tma:64,128,128,4,1,8,2,tma
768,384,65536:128,192,64,4,2,8,1,tma:128,192,64,4,2,8,2,tma
768,384,12288:128,192,64,4,2,8,1,tma:128,192,64,4,2,8,2,tma
1024,512,49152:128,256,64,4,2,8,1,tma:128,256,64,4,2,8,2,tma"
jobs=""
for r in $ROWS; do IFS=: read s a b <<< "$r"; jobs="$jobs $s $s:$a $s:$b"; done
timeout 200 python3 benchmarks/gemm_precompile.py $jobs --jobs 16 > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
for r in $ROWS; do
  IFS=: read s a b <<< "$r"
  $P $s $a $b --rounds 100 --json $R/s${s//,/_}.json > $R/s${s//,/_}.txt 2>&1; echo "exit $?" >> $R/s${s//,/_}.txt
  echo "== $s"; grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/s${s//,/_}.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call4.tgz call4 && rm -rf call4
