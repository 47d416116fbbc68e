#!/usr/bin/env bash
# Session 40, call 3: the final rules (flattened tiles for every one-block-per-tile implicit tile, BN 256 for short K loops), every convolution GPU test: the planner's flattened-position tiles (conv_im2col_gemm) on the GPU — its GPU tests, then the
# sweep with the implicit kernel's tile timed beside it (--flat), ResNet-50 at batch 32 and the rows of few tiles.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
export PYTHONPATH=$PWD/src:/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" >> $OUT/env.txt
timeout 250 python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_conv_im2col.py tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py tests/kernels/test_conv_epilogue.py tests/kernels/test_conv_transposed.py tests/frontend/test_convolution.py 2>&1 | tail -25 > $OUT/gpu_tests.log
cat $OUT/gpu_tests.log
timeout 330 python3 benchmarks/conv_implicit_sweep.py --flat --extra --rounds 15 --json $OUT/sweep.json 2>&1 | tee $OUT/sweep.txt | tail -45
