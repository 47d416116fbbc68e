#!/usr/bin/env bash
# device call 5: the griddepcontrol prologue A/B on generated solutions of many short blocks
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 230 python3 benchmarks/grid_dependency_ab.py --problems .kbdata/kernelbench/level1 \
  --solutions .gen29/a/solutions .gen29/b/solutions --rounds 15 --json $OUT/ab.json \
  44_Average_Pooling_1D 41_Max_Pooling_1D 46_Average_Pooling_3D 19_ReLU 43_Max_Pooling_3D 47_Sum_reduction_over_a_dimension > $OUT/ab.txt 2>&1
echo "exit $?" >> $OUT/ab.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
cat $OUT/ab.txt | tail -20
