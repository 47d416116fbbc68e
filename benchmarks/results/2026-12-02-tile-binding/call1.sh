#!/usr/bin/env bash
# device call 1 (session 39, one H200): the persistent GEMM's producer with its tile coordinates bound once (T.let),
# against the same kernels without the binding (.old/src: HEAD before this session's change), every suite of
# benchmarks/gemm_shapes.py, heuristic plan only, each process interleaving its kernels with cuBLAS.
# Order: old, new, then old again for the table suite (run-to-run drift).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1
R=benchmarks/results/2026-12-02-tile-binding
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env1.txt 2>&1
run() {  # $1: label, $2: src dir, rest: gemm_shapes args
  local label=$1 src=$2; shift 2
  PYTHONPATH=$PWD/$src:/tmp/site CUDA_VISIBLE_DEVICES=0 timeout -k 10 280 python3 benchmarks/gemm_shapes.py "$@" \
    --json $OUT/gemm_$label.json > $OUT/gemm_$label.txt 2>&1
  echo "exit $?" >> $OUT/gemm_$label.txt
  grep -E "geometric|^exit" $OUT/gemm_$label.txt | sed "s/^/$label: /"
}
run old .old/src --suite all --sweep 0 --budget 0.3
run new src --suite all --sweep 0 --budget 0.3
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env1.txt; date -u >> $OUT/env1.txt
