#!/usr/bin/env bash
# device call (session 21): the implicit convolution's 5-d strided view on the GPU: its GPU tests, level 1's 76
# solved again on it and judged (run 92d741af5307 in .gen21c), and the implicit sweep (ResNet-50's strided rows
# among the others) against cuDNN
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 120 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_implicit.py -k gpu > $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
timeout -k 10 -s INT 60 python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_conv.py >> $OUT/gpu_tests.log 2>&1
echo "pytest exit $?" >> $OUT/gpu_tests.log
date -u >> $OUT/env.txt
timeout -k 20 -s INT 120 python3 -m argus kernelbench --generate --problems .kbdata/kernelbench --level 1 \
  --solutions .gen21c/solutions --store .gen21c/kb.sqlite --resume 92d741af5307 --only 76 \
  --trials 2 --reps 10 --timeout 100 --csv $OUT/kb76.csv > $OUT/kb76.log 2>&1
echo "judge exit $?" >> $OUT/kb76.log
date -u >> $OUT/env.txt
timeout -k 10 -s INT ${SWEEP_S:-170} python3 benchmarks/conv_implicit_sweep.py --rounds 10 --json $OUT/sweep.json > $OUT/sweep.md 2>&1
echo "sweep exit $?" >> $OUT/sweep.md
date -u >> $OUT/env.txt
