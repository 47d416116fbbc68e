#!/usr/bin/env bash
# device call 1 (session 63, issue #23): the routing's sort by expert in two DSL launches (`moe.ROUTE_KERNEL`) against
# PyTorch's sort, for the routing alone and the whole layer, eager and graphed, interleaved; equal field by field
# (the routing) and bit for bit (the layer) before timing. Also the layer's and the routing kernels' GPU tests.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/route1
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 300 python3 benchmarks/moe_route_ab.py --rounds 20 \
  --cases Qwen3-30B-A3B:1 Qwen3-30B-A3B:16 Qwen3-30B-A3B:256 Mixtral:1 Mixtral:16 DeepSeek-V3:1 DeepSeek-V3:64 > $R/ab.txt 2>&1
echo "exit $?" >> $R/ab.txt
cat $R/ab.txt | cut -c1-200
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf route1.tgz route1 && rm -rf route1
