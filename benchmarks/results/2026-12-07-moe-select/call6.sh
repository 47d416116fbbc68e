#!/usr/bin/env bash
# Session 71, call 6 (issue #23): DeepSeek-V3's routing (sigmoid scores, correction bias, 8 groups of which 4 chosen,
# weights x 2.5) in one launch (moe_route_select, moe.SELECT_KERNEL) against PyTorch's operators: the MoE GPU tests,
# then the layer A/B at decode and prefill sizes (interleaved, eager and graphed) and a decode step's kernels.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env6.txt 2>&1
timeout 200 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_select.py \
  tests/kernels/test_moe_route.py tests/kernels/test_moe_layer.py -m gpu 2>&1 | tail -5 | tee $R/pytest6.txt
timeout 200 python3 benchmarks/moe_layer_ab.py --routing deepseek --switches SELECT_KERNEL \
  --cases DeepSeek-V3:1 DeepSeek-V3:8 DeepSeek-V3:32 DeepSeek-V3:256 --rounds 15 2>&1 | tee $R/select6.txt
for on in 1 0; do
  timeout 60 python3 benchmarks/moe_layer_trace.py --routing deepseek --cases DeepSeek-V3:1 --replays 20 \
    --set SELECT_KERNEL=$on 2>&1 | grep -v Warn | tee -a $R/trace6.txt
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env6.txt 2>&1
