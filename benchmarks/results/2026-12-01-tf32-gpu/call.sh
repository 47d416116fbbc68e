#!/usr/bin/env bash
# device call (session 34, single H200): the TF32 wgmma path on hardware (benchmarks/gemm_tf32.py: the operand
# conversion bit for bit against the interpreter's model, then matmul(precision="tf32") against cuBLAS TF32), and the
# attention lineage's TMA + wgmma rung (6) through the gate beside the swizzle rung (5) below it
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys,typer,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'typer', typer.__version__, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 5 -s INT ${TF32_S:-300} python3 benchmarks/gemm_tf32.py --budget 0.5 --json $OUT/tf32.json > $OUT/tf32.txt 2>&1
echo "exit $?" >> $OUT/tf32.txt
for k in attention_tma_wgmma attention_swizzle; do
  timeout -k 5 -s INT 110 python3 -m argus bench $k --shapes "BH=16,S=2048" --trials 1 --reps 5 --markdown $OUT/$k.md > $OUT/$k.log 2>&1
  echo "exit $?" >> $OUT/$k.log
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
cut -c1-250 $OUT/tf32.txt | tail -n 20; tail -n 6 $OUT/*.md $OUT/attention*.log | cut -c1-250
