#!/usr/bin/env bash
# device call 2: programmatic dependent launches (every kernel waits with griddepcontrol.wait; matmul launches a
# plan's kernels as dependents): the runtime and GEMM GPU tests, the shape suites with the heuristic's multi-kernel
# plans also timed without dependent launches (A/B in one process), level 1's 14 and 15 judged at their size
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 240 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/runtime/test_gpu.py tests/kernels/test_gemm_split_tail.py tests/kernels/test_gemm_matmul.py tests/kernels/test_gemm_epilogue.py > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/gputests.log | cut -c1-300 | head -20
timeout -k 10 -s INT 200 python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.4 --dependent-ab --json $OUT/shapes.json > $OUT/shapes.txt 2>&1
echo "bench exit $?" >> $OUT/shapes.txt; grep -v "^compile" $OUT/shapes.txt | cut -c1-220
timeout -k 20 -s INT 120 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 \
  --solutions .gen28/solutions --only 14,15 --trials 2 --reps 10 --timeout 100 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log; tail -8 $OUT/kb.log | cut -c1-250
date -u >> $OUT/env.txt
