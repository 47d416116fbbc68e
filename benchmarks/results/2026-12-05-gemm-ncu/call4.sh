#!/usr/bin/env bash
# device call 4 (session 59, issue #20): the plan with one-launch GEMVs (`gemv_tma_one_launch`) against the split
# plan it replaces (`gemv_tma_config`'s configuration, given explicitly), interleaved with cuBLAS, at one-row and
# matrix-vector shapes including ones call 3 did not time; the tail-twin rule (`TAIL_TWIN_MARGIN`) at the shapes whose
# choice it changes, each against its unsplit twin. Every contender is checked against the f32 product before it is
# timed (the probes exit 1 on a wrong one); 1x2200x1000 (a partial last row tile, a K tail) is there for that check.
# (The GPU tests were left out: z3's wheel and the tree pass the 64 MiB a call carries.)
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call4
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 60 python3 benchmarks/gemm_config_probe.py"
# shape and the split configuration the plan took before (gemv:BN,STAGES,THREADS,LANES,PARTIAL,SPLITS)
for job in 1,4096,4096:gemv:64,4,256,8,1,7 1,14336,4096:gemv:64,4,256,8,1,2 1,8192,8192:gemv:64,4,256,8,1,4 \
           1,4096,14336:gemv:64,4,256,8,1,7 1,11008,4096:gemv:64,4,256,8,1,3 1,28672,4096:gemv:64,4,256,8,1,1 \
           4096,1,4096:gemv:64,4,256,8,1,7 8192,1,8192:gemv:64,4,256,8,1,4 16384,1,4096:gemv:64,4,256,8,1,2 \
           1,2200,1000:gemv:64,4,256,8,1,4; do
  s=${job%%:*}; c=${job#*:}; f=$R/gemv_${s//,/x}
  $P $s $c --rounds 150 --json $f.json > $f.txt 2>&1; echo "exit $?" >> $f.txt
  grep -h -E "cuBLAS [0-9]|x cuBLAS|exit [1-9]|WRONG|refused" $f.txt | cut -c1-110
done
# the tail-twin rule: bf16 2056x28672x28672 (tail2) against its unsplit twin
$P 2056,28672,28672 128,256,64,4,2,1,1,tma --rounds 40 --json $R/tail_bf16.json > $R/tail_bf16.txt 2>&1
echo "exit $?" >> $R/tail_bf16.txt; grep -h -E "cuBLAS [0-9]|x cuBLAS|exit|WRONG" $R/tail_bf16.txt | cut -c1-110
timeout -k 5 -s INT 150 python3 benchmarks/gemm_fp8.py --shapes 8192,8192,28672 8192,14336,8192 3096,28672,8192 --sweep 6 --budget 0.5 \
   --json $R/tail_fp8.json > $R/tail_fp8.txt 2>&1; echo "exit $?" >> $R/tail_fp8.txt
grep -h -v "^    " $R/tail_fp8.txt | tail -6 | cut -c1-240
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
cd $OUT && tar czf call4.tgz call4 && rm -rf call4
