#!/usr/bin/env bash
# device call 4: the losses whose whole elementwise part is now fused into their reduction (several inputs), solved on
# a CPU into .gen20b (run 8d73d3073c73), judged; then the GPU test of 33_BatchNorm's three stages after the fix
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 20 -s INT ${JUDGE_S:-200} python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen20b/solutions --store .gen20b/kb.sqlite --resume 8d73d3073c73 --only ${IDS:-94,98,99,100} \
  --trials 2 --reps 10 --timeout 150 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${TESTS_S:-170} python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu --tb=short -rA tests/frontend/test_solve_gpu.py \
  -k "${TESTS_K:-33_BatchNorm}" > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
