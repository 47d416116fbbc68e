#!/usr/bin/env bash
# device call 1 (session 31): where a KernelBench judge spends its time (identity solutions, trials 3, reps 20)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; nproc; free -g | head -2; date -u; } > $OUT/env.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${RUN_S:-420} python3 benchmarks/gate_cost.py --only ${ONLY:-19,23,1} --trials 3 --reps 20 --top 45 --json $OUT/gate_cost.json > $OUT/gate_cost.txt 2>&1
echo "exit $?" >> $OUT/gate_cost.txt
grep -E "^== |exit" $OUT/gate_cost.txt; grep -v "^compile" $OUT/gate_cost.txt | cut -c1-200 | head -n 150
