#!/usr/bin/env bash
# device call 2 (session 39): the implicit convolution's persistent producer with its tile bound (T.let) against it
# unbound (.old/src), conv_implicit_sweep.py's rows (ResNet-50 bf16 at batch 32, KLineage), cuDNN interleaved in
# each process; then the GEMM table suite again in the order new, old (drift check for call 1).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env2.txt 2>&1
conv() {
  local label=$1 src=$2
  PYTHONPATH=$PWD/$src:/tmp/site CUDA_VISIBLE_DEVICES=0 timeout -k 10 200 python3 benchmarks/conv_implicit_sweep.py \
    --json $OUT/conv_$label.json > $OUT/conv_$label.txt 2>&1
  echo "exit $?" >> $OUT/conv_$label.txt
  grep -E "geomean|^exit" $OUT/conv_$label.txt | sed "s/^/conv $label: /"
}
gemm() {
  local label=$1 src=$2
  PYTHONPATH=$PWD/$src:/tmp/site CUDA_VISIBLE_DEVICES=0 timeout -k 10 120 python3 benchmarks/gemm_shapes.py --suite table \
    --sweep 0 --budget 0.5 --json $OUT/gemm_table_$label.json > $OUT/gemm_table_$label.txt 2>&1
  grep -E "geometric" $OUT/gemm_table_$label.txt | sed "s/^/gemm table $label: /"
}
conv new src
conv old .old/src
gemm new src
gemm old .old/src
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env2.txt; date -u >> $OUT/env2.txt
