#!/usr/bin/env bash
# device call: the wall clock of 38_L1Norm_'s and 19_ReLU's solutions against their events, then the GPU tests of
# argus solve that call 2 did not reach
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for p in 38_L1Norm_ 19_ReLU; do
  echo "## $p" >> $OUT/wall.md
  timeout -k 10 120 python3 benchmarks/wall_vs_events_gpu.py .kbdata/kernelbench/level1/$p.py .gen20/solutions/$p.py >> $OUT/wall.md 2>&1
done
timeout -k 10 -s INT ${TESTS_S:-380} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu --tb=short -rA tests/frontend/test_solve_gpu.py \
  -k "${TESTS_K:-33_BatchNorm or partial or tuning or 98_KL or 35_Group}" > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
