#!/usr/bin/env bash
# Session 72, call 1 (issue #22): head dims between the 64-column panels (40, 80, 96, 192; d128 as the known row)
# against SDPA's cuDNN and FA2 backends, then sliding windows against FlexAttention; the attention GPU tests first.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"
  date -u; } > $R/env1.txt 2>&1
timeout 120 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_sdpa.py \
  tests/kernels/test_sdpa_varlen.py tests/kernels/test_sdpa_paged.py -k "gpu" 2>&1 | tail -5 | tee $R/pytest1.txt
timeout 270 python3 benchmarks/attention_sweep.py --quick --rounds 15 --head-dims 40 80 96 128 192 \
  --only "d40 " --only "d80 " --only "d96 " --only "d128 " --only "d192 " --only "decode B=16 32/8 d" \
  --json $R/sweep1.json 2>&1 | tee $R/sweep1.md
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env1.txt 2>&1
timeout 170 python3 benchmarks/attention_window.py --rounds 15 --json $R/window1.json 2>&1 | tee $R/window1.md
