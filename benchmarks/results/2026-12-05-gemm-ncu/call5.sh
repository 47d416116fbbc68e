#!/usr/bin/env bash
# device call 5 (session 59, issue #20): the final plan. One-row and matrix-vector products on the one-launch GEMV at 8
# stages (what `gemv_tma_one_launch` plans: 16 stages are past the verifier's look-back), against the 16-stage ring
# and the split plan it replaced, interleaved with cuBLAS; then the issue's bf16 suite with the plan as committed.
# CALL names the results (default call5; call7.sh runs it again as call7).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
C=${CALL:-call5}
R=$OUT/$C
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
P="timeout -k 5 -s INT 45 python3 benchmarks/gemm_config_probe.py"
for job in 1,4096,4096:gemv:64,4,256,8,1,7 4096,1,4096:gemv:64,4,256,8,1,7 8192,1,8192:gemv:64,4,256,8,1,4 \
           1,4096,14336:gemv:64,4,256,8,1,7 1,2200,1000:gemv:64,4,256,8,1,4 1,11008,4096:gemv:64,4,256,8,1,3; do
  s=${job%%:*}; c=${job#*:}; f=$R/gemv_${s//,/x}
  $P $s $c gemv:16,16,128,8,1,1,1 --rounds 150 --json $f.json > $f.txt 2>&1; echo "exit $?" >> $f.txt
  grep -h -E "cuBLAS [0-9]|x cuBLAS|exit [1-9]|WRONG|refused" $f.txt | cut -c1-110
done
timeout -k 5 -s INT 170 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 --json $R/issue.json > $R/issue.txt 2>&1
echo "exit $?" >> $R/issue.txt
grep -h -E "geometric|exit|WRONG|Error|refused|1x4096x4096" $R/issue.txt | cut -c1-200
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
cd $OUT && tar czf $C.tgz $C && rm -rf $C
