#!/usr/bin/env bash
# device call 2 (session 54, issue #20): the 2-block cluster (B shared) at shapes call 1 did not time: the opening
# table, the held-out and mid suites, rows whose pitch is 16 bytes past a multiple of 32 (K % 16 == 8 in bf16:
# also the heuristic's choice without its pitch copies, --unpitched) and long-K split-K products; then 512x512x65536
# with every tile and ten configurations, each also in clusters.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call2/env.txt
date -u >> $OUT/call2/env.txt
for suite in table heldout mid; do
  timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --suite $suite --sweep 1 --cluster --unpitched \
      --json $OUT/call2/$suite.json > $OUT/call2/$suite.txt 2>&1
  echo "exit $?" >> $OUT/call2/$suite.txt
done
timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --shapes 5336,6240,5816 3000,3000,3000 13664,2600,3592 \
    1024,1024,1000 656,10192,3464 4000,12000,1800 2000,3000,1000 1024,1024,1016 768,768,32768 2048,1024,32768 \
    256,256,131072 1536,1536,16384 1024,1024,16384 --sweep 1 --cluster --unpitched \
    --json $OUT/call2/extra.json > $OUT/call2/extra.txt 2>&1
echo "exit $?" >> $OUT/call2/extra.txt
timeout -k 5 -s INT 100 python3 benchmarks/gemm_shapes.py --shapes 512,512,65536 --sweep 10 --cluster --every-tile \
    --json $OUT/call2/deep.json > $OUT/call2/deep.txt 2>&1
echo "exit $?" >> $OUT/call2/deep.txt
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $OUT/call2/env.txt
for f in table heldout mid extra deep; do grep -v "^    \|CodegenError\|^  requires\|^  actual" $OUT/call2/$f.txt | grep -v "^GPU\|^torch\|^nvidia\|^NVRTC" | cut -c1-230; done
