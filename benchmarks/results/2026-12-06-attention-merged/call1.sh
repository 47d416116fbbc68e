#!/usr/bin/env bash
# device call 1 (session 62, issue #22): split-key decoding with the merge in the kernel's own launch
# (`AttentionConfig.COMBINED`, `flash_attention_combined`) against the two launches (`flash_attention` split, then
# `attention_combine`) and cuDNN / FlashAttention-2, on every row of `benchmarks/attention_decode.py` whose split grid
# is one wave ("x merged" column), then the merged kernel against the two launches (bit for bit, relaunched
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
# bit for bit the two launches' result, relaunched three times on the same counters (the GPU test's check, inline:
# no z3 on the device for the test module's imports)
timeout -k 5 120 python3 - > $R/check.txt 2>&1 <<'PY'
from dataclasses import replace
import torch
from argus.kernels import sdpa as S
for b, h, hk, sq, sk, d, causal in [(1, 32, 8, 1, 8192, 128, False), (2, 32, 8, 1, 30000, 128, True),
                                    (1, 4, 4, 16, 20000, 64, True), (1, 16, 1, 1, 32768, 128, False)]:
    q = torch.randn(b, h, sq, d, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(b, hk, sk, d, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(b, hk, sk, d, device="cuda", dtype=torch.bfloat16)
    config = replace(S.choose(S.problem_of(q, k, v, causal=causal)), COMBINED=True)
    o, lse, launches = S.prepare(q, k, v, causal=causal, config=config)
    for _ in range(3):
        for launch in launches:
            launch.launch()
    o2, lse2 = S.sdpa(q, k, v, causal=causal, return_lse=True)
    torch.cuda.synchronize()
    print(config.label(), (b, h, hk, sq, sk, d, causal), "equal" if torch.equal(o, o2) and torch.equal(lse, lse2)
          else f"DIFFERENT {(o.float() - o2.float()).abs().max().item():.3e}")
PY
echo "exit $?" >> $R/check.txt; cat $R/check.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf call1.tgz call1 && rm -rf call1
