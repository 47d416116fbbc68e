#!/usr/bin/env bash
# device call 1 (session 62, issue #22): split-key decoding with the merge in the kernel's own launch
# (`AttentionConfig.COMBINED`, `flash_attention_combined`) against the two launches (`flash_attention` split, then
# `attention_combine`) and cuDNN / FlashAttention-2, on every row of `benchmarks/attention_decode.py` whose split grid
# is one wave ("x merged" column), then the merged kernel's GPU test (bit for bit the two launches' result, relaunched
# three times on the same counters). Decides `sdpa.COMBINE_IN_KERNEL`.
set -u
export PYTHONPATH=$PWD/src:$PWD PYTHONUNBUFFERED=1
R=$OUT/call1
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 420 python3 benchmarks/attention_decode.py --rounds 20 --json $R/decode.json > $R/decode.md 2>&1
echo "exit $?" >> $R/decode.md
grep -E "^\| |exit" $R/decode.md | cut -c1-240
# the GPU test needs pytest and the repository's tests package (no z3 on the device: the verification test is left
# out with -k)
timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/kernels/test_sdpa_combined.py \
  -k "gpu or interpreter" > $R/tests.txt 2>&1; echo "exit $?" >> $R/tests.txt; tail -3 $R/tests.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call1.tgz call1 && rm -rf call1
