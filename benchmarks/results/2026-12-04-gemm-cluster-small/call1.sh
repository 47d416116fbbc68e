#!/usr/bin/env bash
# device call 1 (session 52, issue #20): does a 2-block cluster sharing one operand tile through a TMA multicast
# close the small and mid products' gap to cuBLAS? `benchmarks/gemm_cluster_small_probe.py` edits the planner's own
# kernel at each shape into B-multicast (grouped order) and A-multicast (row-major order) variants, at the planner's
# 132 blocks and at one block per tile, checks each against the f32 product and times them interleaved with cuBLAS
# and the unedited planner kernel.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
# the image has no cuobjdump wheel: the toolkit's own (the probe prints SASS TMA load counts)
[ -x /usr/local/cuda/bin/cuobjdump ] && export ARGUS_CUDA_HOME=/usr/local/cuda
mkdir -p $OUT/call1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call1/env.txt
python3 -c "import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda)" >> $OUT/call1/env.txt
date -u >> $OUT/call1/env.txt
timeout -k 5 -s INT 540 python3 benchmarks/gemm_cluster_small_probe.py --rounds 200 --json $OUT/call1/probe.json \
    --source-dir /tmp/probe_src > $OUT/call1/probe.txt 2>&1
echo "exit $?" >> $OUT/call1/probe.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $OUT/call1/env.txt
tail -n 80 $OUT/call1/probe.txt | cut -c1-220
