#!/usr/bin/env bash
# device call 1 (session 45): where a MoE decode step's time goes (issue #23): each step's CUDA-graph replay and its
# kernels' profiler times at 1, 16 and 64 tokens.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; date -u; } > $OUT/env1.txt 2>&1
timeout -k 10 300 python3 benchmarks/moe_decode_profile.py --tokens 1 16 64 > $OUT/profile1.txt 2>&1
