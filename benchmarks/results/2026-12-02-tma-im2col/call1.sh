#!/usr/bin/env bash
# device call (session 39): TMA im2col loads on the H200 against argus's model (argus.atoms.tma.im2col_rows):
# tests/runtime/test_tma_im2col.py (the probe kernel over six convolution geometries, two swizzles, tiles crossing
# rows and images, three taps each).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site CUDA_VISIBLE_DEVICES=0
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 240 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=long tests/runtime/test_tma_im2col.py > $OUT/im2col_tests.log 2>&1
echo "tests exit $?" >> $OUT/im2col_tests.log; tail -n 30 $OUT/im2col_tests.log
