#!/usr/bin/env bash
# device call (session 31): the sandbox wire's CUDA IPC path on a GPU (its GPU tests), the judge's cost with it on
# the two problems call 1 profiled (19 ReLU, 23 Softmax: 6.4 GB outputs), and the GEMM layouts suite (swap-AB for a
# transposed A, 64x8192x8192 TN/TT)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env3.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/eval/test_sandbox_ipc.py tests/kernels/test_gemm_swap.py -k "gpu or ipc" > $OUT/ipc_tests.log 2>&1; echo "tests exit $?" >> $OUT/ipc_tests.log; tail -n 5 $OUT/ipc_tests.log
CUDA_VISIBLE_DEVICES=0 timeout -k 10 200 python3 benchmarks/gate_cost.py --only 19,23 --trials 3 --reps 20 --top 25 --json $OUT/gate_cost_ipc.json > $OUT/gate_cost_ipc.txt 2>&1
echo "exit $?" >> $OUT/gate_cost_ipc.txt; grep -E "^== |exit" $OUT/gate_cost_ipc.txt
CUDA_VISIBLE_DEVICES=0 timeout -k 10 150 python3 benchmarks/gemm_shapes.py --suite layouts --sweep 0 --budget 0.5 --json $OUT/layouts.json > $OUT/layouts.txt 2>&1
echo "exit $?" >> $OUT/layouts.txt; grep -v "^compile" $OUT/layouts.txt | tail -n 14
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env3.txt; date -u >> $OUT/env3.txt
