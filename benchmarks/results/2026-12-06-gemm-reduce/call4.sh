#!/usr/bin/env bash
# device call 4 (session 64, issue #20): f32 linear layers whose weight is a module parameter: its bf16 split parts
# made once (`matmul.CACHE_PARAMETER_SPLITS`) against the same call splitting it every time, strict fp32 eager and
# torch.compile, interleaved; the GPU test of the cache (split once, again after an in-place write).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/param4
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_gemm_matmul.py \
  -k "parameter or library_gemm" > $R/gputest.txt 2>&1
echo "exit $?" >> $R/gputest.txt
tail -5 $R/gputest.txt
timeout -k 5 -s INT 360 python3 benchmarks/gemm_f32_parameter.py --rounds 20 --json $R/rows.json > $R/bench.txt 2>&1
echo "exit $?" >> $R/bench.txt
cat $R/bench.txt | cut -c1-230
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf param4.tgz param4 && rm -rf param4
