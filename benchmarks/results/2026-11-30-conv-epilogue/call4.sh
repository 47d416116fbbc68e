#!/usr/bin/env bash
# device call 4 (session 25): argus solve's GPU tests (tests/frontend/test_solve_gpu.py: each family's solution checked
# compiled on the device and judged there; nine of its tests had never run on a GPU)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${T_S:-540} python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short --durations=0 \
  tests/frontend/test_solve_gpu.py > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log; grep -E "^E |^FAILED|passed|failed|s call" $OUT/tests.log | cut -c1-300 | head -40
date -u >> $OUT/env.txt
