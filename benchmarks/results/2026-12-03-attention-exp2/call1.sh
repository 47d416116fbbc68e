#!/usr/bin/env bash
# device call 1 (session 45, issue #22): exponentials on the FMA pipe (`T.exp2(x, fma_every=P)`, flash_attention's
# EXP2_FMA). The GPU tests (the polynomial against float64, the attention kernel with it against torch), then the
# head-dim-64 rows (and d128 at 4k) with EXP2_FMA = 2, 4, 6, 8 beside the chosen configuration, interleaved with
# cuDNN and FA2; then the MoE decode call of 2026-12-03-moe-decode (issue #23).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $OUT/env1.txt 2>&1
timeout -k 5 100 python3 -m pytest -q -p no:cacheprovider tests/backend/test_exp2_fma.py tests/kernels/test_sdpa.py -k "gpu and (fma or overlapped)" > $OUT/tests1.txt 2>&1
tail -3 $OUT/tests1.txt
timeout -k 5 220 python3 benchmarks/attention_sweep.py --quick --rounds 10 --only "d64 " --only "d128 full S=4096" \
  --alt EXP2_FMA=2 --alt EXP2_FMA=4 --alt EXP2_FMA=6 --alt EXP2_FMA=8 --json $OUT/sweep1.json > $OUT/sweep1.txt 2>&1
grep "^| d" $OUT/sweep1.txt | cut -c1-400
bash benchmarks/results/2026-12-03-moe-decode/call1.sh
