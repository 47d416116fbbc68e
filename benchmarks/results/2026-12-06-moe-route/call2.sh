#!/usr/bin/env bash
# device call 2 (session 63, issue #23): what bounds the down-projection at one token (Mixtral: 2 experts x 32 column
# tiles = 64 units, 54 % of HBM on an H200; 64x64 tiles, 128 units, were no faster: the sequential K-steps per unit,
# 224 of them, not the units, look like the bound). Deeper K-blocks halve the steps: 64xNx128 against the chosen
# 64x128x64 s8, interleaved with torch._grouped_mm, at 1 and 16 tokens on the three shapes, both products.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/decode2
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 420 python3 benchmarks/moe_decode_configs.py --rounds 10 --tokens 1 16 \
  --config 64x128x64:8 --config 64x128x128:4 --config 64x64x128:6 --config 64x256x128:2 --json $R/configs.json \
  > $R/configs.txt 2>&1
echo "exit $?" >> $R/configs.txt
cat $R/configs.txt | cut -c1-250
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf decode2.tgz decode2 && rm -rf decode2
