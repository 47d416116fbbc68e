#!/usr/bin/env bash
# device call 5: pointwise convolutions on NCHW tensors as a product per image: the implicit/pointwise GPU tests,
# the pointwise sweep, and KernelBench 86 judged again (solved again on a CPU: run 0b7ceec1614d of .gen22b)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 150 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_implicit.py tests/kernels/test_conv_depthwise.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT 150 python3 benchmarks/conv_pointwise_sweep.py --rounds 10 --json $OUT/pointwise.json > $OUT/pointwise.log 2>&1
echo "sweep exit $?" >> $OUT/pointwise.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT 150 python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen22b/solutions --store .gen22b/kb.sqlite --resume 0b7ceec1614d --only 86 \
  --trials 2 --reps 10 --timeout 140 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
date -u >> $OUT/env.txt
