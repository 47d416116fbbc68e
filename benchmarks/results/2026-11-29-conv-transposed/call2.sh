#!/usr/bin/env bash
# device call 2 (session 23): the garbage-collection probe on two flagged problems (level 2's 1, the f32 implicit
# kernel, and 61, the gather path), the GPU tests of the transposed phases and of the implicit kernel, then the
# transposed-convolution sweep
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
K=.kbdata/kernelbench/level2 S=.gen23/all P=benchmarks/results/2026-11-29-unsynced/probe_gc.py
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; } > $OUT/env.txt 2>&1
for p in 1_Conv2D_ReLU_BiasAdd 61_ConvTranspose3d_ReLU_GroupNorm; do
  echo "== $p" >> $OUT/probe_gc.txt
  timeout -k 10 120 python3 $P $K/$p.py $S/$p.py >> $OUT/probe_gc.txt 2>&1
done
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 0 tests/kernels/test_conv_transposed.py \
  tests/kernels/test_conv_implicit.py -k gpu > $OUT/pytest.txt 2>&1
timeout -k 10 ${SWEEP_S:-240} python3 benchmarks/conv_transposed_sweep.py --rounds 5 --json $OUT/sweep.json > $OUT/sweep.txt 2>&1
echo "sweep exit $?" >> $OUT/sweep.txt
date -u >> $OUT/env.txt
