#!/usr/bin/env bash
# device call 3 (session 62, issue #20): `matmul.narrow_split` (CLUSTER_NARROW_SPLITS on: a split-K plan of >= 8 splits
# on <= 16 tiles of 128x128 takes 128x128 tiles in clusters, split within one wave, fused) at eight shapes drawn at
# random in its domain that nothing was fitted on (seed 62: the first eight drawn whose plan the rule changes), and
# at the three of call 1 it changes; each: the plan (the rule on: "heuristic") against the rule
# off (the explicit configuration), interleaved with cuBLAS, checked against the f32 product before and after.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call3
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 150 python3 benchmarks/gemm_config_probe.py"
declare -A OFF
OFF[192,384,98304]="128,192,64,4,2,32,2,tma"
OFF[256,384,16384]="64,192,128,3,1,12,1,tma"
OFF[192,1024,32768]="64,256,64,5,1,8,1,tma,fused"
OFF[448,256,40960]="64,256,64,5,1,16,2,tma,fused"
OFF[256,384,49152]="64,192,128,3,1,16,2,tma"
OFF[448,384,49152]="128,192,64,4,2,16,2,tma"
OFF[512,384,32768]="64,192,128,3,1,8,1,tma,fused"
OFF[192,768,49152]="64,256,64,5,1,12,1,tma"
OFF[512,512,65536]="128,256,64,4,2,16,2,tma,fused"
OFF[512,512,32768]="64,256,64,5,1,8,1,tma,fused"
OFF[256,512,65536]="64,256,64,5,1,16,2,tma,fused"
S="192,384,98304 256,384,16384 192,1024,32768 448,256,40960 256,384,49152 448,384,49152 512,384,32768 192,768,49152 512,512,65536 512,512,32768 256,512,65536"
jobs=""
for s in $S; do jobs="$jobs $s $s:${OFF[$s]}"; done
timeout 300 python3 benchmarks/gemm_precompile.py $jobs --jobs 16 > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
for s in $S; do
  $P $s ${OFF[$s]} --rounds 100 --json $R/s${s//,/_}.json > $R/s${s//,/_}.txt 2>&1; echo "exit $?" >> $R/s${s//,/_}.txt
  grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/s${s//,/_}.txt
done
# then the issue's bf16 suite on the code as it stands (the rule changes its 512x512x65536 row; the 2-block cluster
# kernels' tile numbering of session 61 was never timed): with it, issue #20's last row
timeout -k 5 -s INT 170 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 --json $R/issue.json > $R/issue.txt 2>&1
echo "exit $?" >> $R/issue.txt
grep -h -E "geometric|exit|WRONG|Error|refused" $R/issue.txt | cut -c1-200
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call3.tgz call3 && rm -rf call3
