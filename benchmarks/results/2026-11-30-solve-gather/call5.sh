#!/usr/bin/env bash
# device call 5: one-kernel vs two-stage sums of one vector (the split threshold), and the class-index losses with
# the threshold lowered to 2**15 elements (a diagnostic run: the constant patched before the benchmark starts)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 200 python3 benchmarks/reduction_split_gpu.py --sizes 4096,32768,262144,1048576,4194304 --rounds 20 > $OUT/split.md 2>&1
echo "split exit $?" >> $OUT/split.md
timeout -k 10 -s INT 220 python3 -c "
import runpy, sys
import argus.frontend.families.reduction as r
r.SPLIT_MIN_ELEMENTS = 1 << 15
sys.argv = ['class_loss_gpu.py', '--rounds', '20', '--out', '/tmp/cl2']
runpy.run_path('benchmarks/class_loss_gpu.py', run_name='__main__')
" > $OUT/class_loss_split.md 2>&1
echo "bench exit $?" >> $OUT/class_loss_split.md
date -u >> $OUT/env.txt
