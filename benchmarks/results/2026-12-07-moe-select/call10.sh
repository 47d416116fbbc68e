#!/usr/bin/env bash
# Session 71, call 10 (issue #23): a bf16 router's logits as one product with f32 accumulation and output
# (moe.LOGITS_16BIT; before: x and the router converted to f32 first, two launches and the router's f32 copy every
# call), A/B in the layer with a bf16 router, each case in its own process; DeepSeek-V3 with its own routing too.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env10.txt 2>&1
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_select.py -m gpu 2>&1 \
  | tail -3 | tee $R/pytest10.txt
for case in Qwen3-30B-A3B:1 Mixtral:1 DeepSeek-V3:1 Qwen3-30B-A3B:8; do
  timeout 90 python3 benchmarks/moe_layer_ab.py --router bf16 --switches LOGITS_16BIT --cases $case --rounds 15 \
    2>&1 | tee -a $R/logits10.txt
done
timeout 90 python3 benchmarks/moe_layer_ab.py --router bf16 --routing deepseek --switches LOGITS_16BIT SELECT_KERNEL \
  --cases DeepSeek-V3:1 --rounds 15 2>&1 | tee -a $R/logits10.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env10.txt 2>&1
