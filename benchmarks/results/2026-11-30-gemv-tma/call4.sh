#!/usr/bin/env bash
# device call 4 (session 30): the issue's 22 bf16 shapes and the opening table with the plan as it now stands (one-row
# and matrix-vector products on gemv_rows_tma), heuristic only, interleaved with cuBLAS
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for suite in issue table; do
  timeout -k 10 ${RUN_S:-200} python3 benchmarks/gemm_shapes.py --suite $suite --sweep 0 --budget 0.4 --json $OUT/$suite.json > $OUT/$suite.txt 2>&1
  echo "exit $?" >> $OUT/$suite.txt; grep -v "^compile" $OUT/$suite.txt | cut -c1-160 | tail -n 28
done
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
