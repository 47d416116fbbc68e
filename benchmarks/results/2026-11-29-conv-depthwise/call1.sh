#!/usr/bin/env bash
# device call 1: the depthwise kernel's GPU tests (and the convolution library's), then the depthwise sweep with
# its tile variants
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT ${TESTS_S:-200} python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_depthwise.py tests/kernels/test_conv.py -m gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${SWEEP_S:-330} python3 benchmarks/conv_depthwise_sweep.py --rounds 10 --variants --json $OUT/sweep.json > $OUT/sweep.log 2>&1
echo "sweep exit $?" >> $OUT/sweep.log
date -u >> $OUT/env.txt
