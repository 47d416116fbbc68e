#!/usr/bin/env bash
# device call 3 (session 59, issue #20): one-row and matrix-vector bf16 products on `gemv_rows_tma` in ONE launch
# (SPLITS = 1: enough blocks from fewer rows per block and a deeper ring instead of a split-K and its reduction),
# and V's K-blocks loaded by TMA into the ring's stages (VSTAGE, new) rather than from global memory per iteration,
# against the plan's split configuration (with and without VSTAGE) and cuBLAS, interleaved (`gemm_config_probe.py`,
# gemv:BN,STAGES,THREADS,LANES,PARTIAL,SPLITS[,VSTAGE]); then call 2 (the bf16 suite with TMA-stored split slices against direct stores; the
# two long FP8 shapes with their split tails).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call3
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 80 python3 benchmarks/gemm_config_probe.py"
G1="gemv:16,8,128,8,1,1,1 gemv:16,16,128,8,1,1,1 gemv:32,16,128,8,1,1,1 gemv:16,8,128,8,1,1 gemv:32,16,128,8,1,1 gemv:16,8,128,8,0,1,1 gemv:32,16,256,8,1,1,1"
declare -A PLAN=([1,4096,4096]=7 [1,14336,4096]=2 [1,8192,8192]=4 [1,4096,14336]=7)  # the plan's splits (64x64 s4 t256)
for s in 1,4096,4096 1,14336,4096 1,8192,8192 1,4096,14336; do
  $P $s $G1 gemv:64,4,256,8,1,${PLAN[$s]},1 --rounds 120 --json $R/gemv_${s//,/x}.json > $R/gemv_${s//,/x}.txt 2>&1; echo "exit $?" >> $R/gemv_${s//,/x}.txt
  grep -h -E "cuBLAS [0-9]|x cuBLAS|exit|WRONG|refused" $R/gemv_${s//,/x}.txt | cut -c1-120
done
cd $OUT && tar czf call3.tgz call3 && rm -rf call3 && cd - > /dev/null
bash benchmarks/results/2026-12-05-gemm-ncu/call2.sh ${1:-bf16,fp8}
