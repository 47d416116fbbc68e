#!/usr/bin/env bash
# device call (session 31): swap-AB plans (C^T = B^T A^T, stored transposed) against cuBLAS and the plan's choice at
# skinny shapes (M <= 128), bf16, A (M, K) row-major, B as nn.Linear stores its weight (N, K)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
SHAPES="2,4096,14336 4,11008,4096 6,5120,5120 8,8192,8192 8,4096,14336 16,14336,4096 24,5120,13824 32,4096,14336 48,1024,65536 64,8192,8192 96,7168,7168 128,4096,4096"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-400} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 2 --budget 0.4 \
  --swap --json $OUT/shapes.json > $OUT/shapes.txt 2>&1
echo "exit $?" >> $OUT/shapes.txt
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_gemm_swap.py tests/kernels/test_gemm_matmul.py -k gpu > $OUT/tests.log 2>&1; echo "tests exit $?" >> $OUT/tests.log; tail -n 3 $OUT/tests.log
grep -v "^compile" $OUT/shapes.txt | cut -c1-300 | tail -n 60
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
python3 - $OUT/shapes.json <<'PY' | tee $OUT/summary.txt
import json, sys
for r in json.load(open(sys.argv[1])):
    c = r["contenders"]
    sw = {k: v for k, v in c.items() if k.endswith("swap")}
    ns = {k: v for k, v in c.items() if not k.endswith("swap")}
    bs = max(sw, key=lambda k: sw[k]["ratio"]) if sw else None
    bn = max(ns, key=lambda k: ns[k]["ratio"]) if ns else None
    print("%-16s cublas %.4f ms heur %.3f (%s) | best plain %.3f %s | best swap %s %s" % (
        "x".join(map(str, r["shape"])), r["cublas_ms"], r["ratio"] or 0, r["heuristic"],
        ns[bn]["ratio"] if bn else 0, bn, "%.3f" % sw[bs]["ratio"] if bs else "-", bs))
PY
