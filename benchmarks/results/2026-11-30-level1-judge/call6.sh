#!/usr/bin/env bash
# device call 6: the tree after the fixes: the poolings (no prologue, 32-bit offsets) against eager; a product whose
# split pass writes more than 2^31 elements (the wide variant) checked against float64
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 5 -s INT 60 python3 benchmarks/wide_offsets_gpu.py > $OUT/wide.txt 2>&1; echo "exit $?" >> $OUT/wide.txt
timeout -k 5 -s INT 120 python3 benchmarks/grid_dependency_ab.py --problems .kbdata/kernelbench/level1 \
  --solutions .gen29/b/solutions --rounds 10 --json $OUT/ab.json \
  43_Max_Pooling_3D 46_Average_Pooling_3D 44_Average_Pooling_1D 41_Max_Pooling_1D > $OUT/ab.txt 2>&1
echo "exit $?" >> $OUT/ab.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
cat $OUT/wide.txt $OUT/ab.txt | tail -12
