#!/usr/bin/env bash
# device call 1: the split tail (GPU tests of matmul and the split tail), then the bf16 shape suites: the heuristic
# against cuBLAS, the configuration the model ranks next, and for every tail row the same configuration without it
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 200 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/kernels/test_gemm_split_tail.py tests/kernels/test_gemm_matmul.py > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/gputests.log | cut -c1-300 | head -20
timeout -k 10 -s INT 330 python3 benchmarks/gemm_shapes.py --suite all --sweep 1 --budget 0.4 --json $OUT/shapes.json > $OUT/shapes.txt 2>&1
echo "bench exit $?" >> $OUT/shapes.txt; grep -v "^compile" $OUT/shapes.txt | cut -c1-200
date -u >> $OUT/env.txt
