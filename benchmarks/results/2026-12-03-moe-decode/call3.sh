#!/usr/bin/env bash
# device call 3 (session 45, issues #23 and #22): the GPU tests of the MoE layer, the grouped kernels and attention
# with the new defaults (wider decode tiles, exponentials on the FMA pipe for causal d64); the chosen decode
# configurations against the previous ones, each product alone; the layer at decode sizes (CUDA graphs); the A/B of
# the routing's top-k of logits and the shared tile counts at one prefill and one decode size (eager and graphed:
# call 2's Qwen3-30B-A3B layer at 4096 tokens ran 1.203 ms against 1.051 ms in session 44); causal d64 attention.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call3
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; date -u; } > $OUT/call3/env.txt 2>&1
timeout -k 5 70 python3 benchmarks/moe_decode_configs.py --rounds 8 --tokens 1 16 64 --products down \
  --config 64x128x64:8 --config 64x256x64:4 > $OUT/call3/down.txt 2>&1
timeout -k 5 50 python3 benchmarks/moe_layer_ab.py --cases Qwen3-30B-A3B:4096 Mixtral:16 --rounds 8 > $OUT/call3/ab.txt 2>&1
timeout -k 5 120 python3 benchmarks/moe_layer_bench.py --graphs --tokens 1 16 64 256 --routings balanced --no-compile \
  --rounds 6 --json $OUT/call3/layer.json > $OUT/call3/layer.txt 2>&1
timeout -k 5 80 python3 benchmarks/moe_decode_configs.py --rounds 8 --tokens 1 16 64 --products up \
  --config 64x64x64:8 --config 64x128x64:5 > $OUT/call3/up.txt 2>&1
timeout -k 5 70 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu > $OUT/call3/tests.txt 2>&1
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_sdpa.py -k "gpu and (fma or sdpa_matches)" >> $OUT/call3/tests.txt 2>&1
timeout -k 5 50 python3 benchmarks/attention_sweep.py --quick --rounds 12 --only "d64 causal" --alt EXP2_FMA=0 \
  > $OUT/call3/attention.txt 2>&1
