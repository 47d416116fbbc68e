#!/usr/bin/env bash
# Session 40: the non-persistent expert GEMM (gemm_hopper = gemm_warp_specialized) before and after the code
# generator's drained K loop (ptxas had serialized its wgmma, C7515), each against cuBLAS in its own process, the
# persistent GEMM (unchanged code) as the control; then every convolution GPU test (-k gpu).
# .old: `git archive 717535f src` (the code generator before the change).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
SHAPES="2048,2048,2048 4096,4096,4096 8192,8192,8192 4096,14336,4096 1024,1024,16384"
for tree in .old/src src src .old/src; do
  echo "== $tree" | tee -a $OUT/parity.txt
  PYTHONPATH=$PWD/$tree:/tmp/site timeout 150 python3 benchmarks/gemm_parity.py --rounds 60 --kernels gemm_hopper,gemm_hopper_persistent --shapes $SHAPES 2>&1 | grep -v "^nvidia\|^GPU\|^torch\|^NVRTC" | tee -a $OUT/parity.txt | tail -8
done
export PYTHONPATH=$PWD/src:/tmp/site
timeout 200 python3 -m pytest -q -p no:cacheprovider -n 0 -k gpu tests/kernels/test_conv_im2col.py tests/kernels/test_conv.py tests/kernels/test_conv_implicit.py tests/kernels/test_conv_epilogue.py tests/kernels/test_conv_transposed.py 2>&1 | tail -25 > $OUT/gpu_tests.log
cat $OUT/gpu_tests.log
