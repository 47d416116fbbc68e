#!/usr/bin/env bash
# device call 6 (the final tree): GPU tests of solve's new paths (cross-entropy, the dynamo fallback, pooling), the
# class-index losses with the split threshold at 2**15, 95 judged at KernelBench's size
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/frontend/test_solve_gpu.py -k "cross_entropy or partial_solution or pool" tests/frontend/test_dynamo_fallback.py > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log
timeout -k 10 -s INT 200 python3 benchmarks/class_loss_gpu.py --rounds 20 --out /tmp/cl3 > $OUT/class_loss.md 2>&1
echo "bench exit $?" >> $OUT/class_loss.md
timeout -k 20 -s INT 90 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 \
  --solutions .gen27/solutions --only 95 --trials 2 --reps 10 --timeout 80 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
