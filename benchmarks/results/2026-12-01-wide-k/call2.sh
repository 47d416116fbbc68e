#!/usr/bin/env bash
# device call 2 (session 32, one H200): the plan with the wide-K rule (WIDE_K_MIN_STAGES) on every suite of
# benchmarks/gemm_shapes.py (issue, table, heldout, layouts), heuristic plus its other K-block width (--wide-k),
# interleaved with cuBLAS
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env2.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-540} python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.5 \
  --wide-k --json $OUT/suite.json > $OUT/suite.txt 2>&1
echo "exit $?" >> $OUT/suite.txt
grep -v "^compile" $OUT/suite.txt | cut -c1-200 | tail -n 70
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env2.txt; date -u >> $OUT/env2.txt
