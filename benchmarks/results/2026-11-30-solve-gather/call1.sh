#!/usr/bin/env bash
# device call 1: GPU tests of the new paths, class-index losses across shapes, 95 and 45 judged at KernelBench's sizes
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${TESTS_S:-170} python3 -m pytest -q -p no:cacheprovider tests/frontend/test_solve_gpu.py -k "cross_entropy or partial_solution" tests/frontend/test_dynamo_fallback.py > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log
timeout -k 10 -s INT ${BENCH_S:-200} python3 benchmarks/class_loss_gpu.py --rounds 20 --out /tmp/cl > $OUT/class_loss.md 2>&1
echo "bench exit $?" >> $OUT/class_loss.md
timeout -k 20 -s INT ${JUDGE_S:-200} python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 \
  --solutions .gen27/solutions --only ${IDS:-95,45} --trials 2 --reps 10 --timeout 180 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
