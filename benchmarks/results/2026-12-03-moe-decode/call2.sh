#!/usr/bin/env bash
# device call 2 (session 45, issues #23 and #22): the exp2 GPU test (launched through the runtime); the MoE layer at
# decode sizes with the row-tile counts made once per layer (CUDA graphs, interleaved with the composed layer); the
# grouped products' decode configurations (wider up-projection tiles on fewer stages, TMA-store epilogues); the
# layer at one prefill size (no regression from the shared tile counts); causal head-dim-64 attention with
# exponentials on the FMA pipe again (EXP2_FMA 5, 6, 8: call 1 of 2026-12-03-attention-exp2 had 6 and 8 at +2-3 %).
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; date -u; } > $OUT/call2/env.txt 2>&1
timeout -k 5 60 python3 -m pytest -q -p no:cacheprovider tests/backend/test_exp2_fma.py -k gpu > $OUT/call2/tests.txt 2>&1
timeout -k 5 190 python3 benchmarks/moe_layer_bench.py --graphs --tokens 1 16 64 256 --routings balanced --no-compile \
  --rounds 6 --json $OUT/call2/layer.json > $OUT/call2/layer.txt 2>&1
timeout -k 5 100 python3 benchmarks/moe_decode_configs.py --rounds 10 --tokens 1 16 64 256 --shapes Mixtral Qwen3-30B-A3B \
  --products up --config 64x128x64:5 --config 64x64x64:8:tma --config 64x128x64:4:tma > $OUT/call2/up.txt 2>&1
timeout -k 5 80 python3 benchmarks/moe_decode_configs.py --rounds 10 --tokens 1 16 64 256 --shapes Mixtral Qwen3-30B-A3B \
  --products down --config 64x256x64:5 --config 64x128x64:8:tma > $OUT/call2/down.txt 2>&1
timeout -k 5 50 python3 benchmarks/moe_layer_bench.py --tokens 4096 --routings balanced --no-compile --rounds 6 \
  --shapes Qwen3-30B-A3B Mixtral > $OUT/call2/prefill.txt 2>&1
timeout -k 5 60 python3 benchmarks/attention_sweep.py --quick --rounds 12 --only "d64 causal" --alt EXP2_FMA=5 \
  --alt EXP2_FMA=6 --alt EXP2_FMA=8 > $OUT/call2/attention.txt 2>&1
