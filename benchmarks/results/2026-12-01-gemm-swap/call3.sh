#!/usr/bin/env bash
# device call (session 31): the GEMM layouts suite with swap-AB for a transposed A (64x8192x8192 TN/TT), and where
# the judge of KernelBench level-1 problem 45 (Average_Pooling_2D: past 150 s in the scale-out run) spends its time
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env3.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 10 90 python3 benchmarks/gemm_shapes.py --suite layouts --sweep 0 --budget 0.5 --json $OUT/layouts.json > $OUT/layouts.txt 2>&1
echo "exit $?" >> $OUT/layouts.txt; grep -v "^compile" $OUT/layouts.txt | tail -n 12
CUDA_VISIBLE_DEVICES=0 timeout -k 10 -s INT 170 python3 benchmarks/gate_cost.py --only 45 --trials 3 --reps 20 --top 40 > $OUT/gate_cost_45.txt 2>&1
echo "exit $?" >> $OUT/gate_cost_45.txt; grep -v "^compile" $OUT/gate_cost_45.txt | cut -c1-180 | head -n 50
