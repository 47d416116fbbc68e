#!/usr/bin/env bash
# device call: tile policies of the slow level-1 solutions swept through their whole ModelNew, at their own sizes
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
P=.kbdata/kernelbench/level1
S=benchmarks/results/2026-11-29-solve-level1-generate/solutions
sweep() { # name problem kernel grid [extra]
  echo "## $1 ($3: $4)" >> $OUT/sweeps.md
  timeout -k 10 ${SWEEP_S:-150} python3 benchmarks/solution_policy_gpu.py $P/$2.py $S/$2.py --kernel $3 --grid "$4" ${5:-} >> $OUT/sweeps.md 2>> $OUT/errors.log
  echo "exit $?" >> $OUT/sweeps.md
}
sweep relu 19_ReLU pointwise_0 "" --alone
sweep sum-middle 47_Sum_reduction_over_a_dimension reduction_0 "BR=4,8,16,32;BN=128,256,512,1024"
sweep l2-reduce 39_L2Norm_ reduction_0 "BM=1,2,4,8;BN=128,256,512,1024"
sweep l2-div 39_L2Norm_ pointwise_1 "BM=1,2,4,8;BN=128,256,512,1024"
sweep maxpool3d 43_Max_Pooling_3D pooling_0 "BH=1,2,4,8;BW=32,64,128"
sweep avgpool3d 46_Average_Pooling_3D pooling_0 "BH=1,2,4,8;BW=32,64,128"
date -u >> $OUT/env.txt
