#!/usr/bin/env bash
# Session 70, call 1 (issue #23): the MoE layer's kernels launched as programmatic dependents (moe.DEPENDENT_LAUNCHES)
# against plain launches, interleaved, eager and graphed, at decode sizes; then the layer's GPU tests.
set -u
export PYTHONPATH=$PWD/.z3:$PWD/src PYTHONUNBUFFERED=1
R=$OUT
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  git log -1 --format=%H 2>/dev/null; date -u; } > $R/env1.txt 2>&1
timeout 330 python3 benchmarks/moe_layer_ab.py --switches DEPENDENT_LAUNCHES --cases Mixtral:1 Mixtral:2 DeepSeek-V3:1 Qwen3-30B-A3B:1 Qwen3-30B-A3B:2 Qwen3-30B-A3B:8 --rounds 15 2>&1 | tee $R/pdl1.txt
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_layer.py -m gpu 2>&1 | tail -5 | tee $R/pytest1.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env1.txt 2>&1
