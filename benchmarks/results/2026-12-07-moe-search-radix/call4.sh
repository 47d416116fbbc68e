#!/usr/bin/env bash
# Session 71, call 4 (issue #23): which tiles stream a small-expert model's decode products fastest (Qwen3-30B-A3B,
# I = 768: the fused SwiGLU kernel's 64 x 64 tiles read 128-byte runs of each weight row, on 96 of the 132 SMs at
# one token). Wider runs, K split for the SMs; DeepSeek-V3's up-projection beside it.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env4.txt 2>&1
timeout 300 python3 benchmarks/moe_decode_configs.py --shapes Qwen3-30B-A3B --tokens 1 8 --products up --rounds 15 \
  --config 64x64x64:8 --config 64x128x64:5 --config 64x64x64:8:direct:s2 --config 64x128x64:8:direct:s2 \
  --config 64x128x64:8:direct:s4 --config 64x256x64:4:direct:s2 --config 64x256x64:4:direct:s4 \
  --config 64x256x64:4:direct:s8 2>&1 | tee $R/qwen_up4.txt
timeout 200 python3 benchmarks/moe_decode_configs.py --shapes Qwen3-30B-A3B --tokens 1 8 --products down --rounds 15 \
  --config 64x128x64:8 --config 64x256x64:4 --config 64x128x64:8:direct:s2 --config 64x256x64:4:direct:s2 \
  --config 64x256x64:4:direct:s3 --config 64x128x64:8:direct:s3 2>&1 | tee $R/qwen_down4.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env4.txt 2>&1
