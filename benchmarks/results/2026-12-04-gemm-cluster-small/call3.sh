#!/usr/bin/env bash
# device call 3 (session 52, issue #20): the mid products' tiles fill few SMs (768x1536x1024 on 64x256: 72 tiles for
# 132 SMs; 1536x1536x2048 on 128x192: 96; 256x7168x2048 on 64x256: 112), where cuBLAS's tile counts are 128-132.
# Do column extents fitted to one wave (BN 160 / 192 / 224, a multiple of 32 as the direct store's lane exchange
# wants) beat them? The tiles are added to `matmul.TILES` on the device copy only (this script's sed); every tile
# shape's best-ranked candidate is timed interleaved with cuBLAS, each checked against the f32 product first.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call3
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version,power.draw,temperature.gpu --format=csv > $OUT/call3/env.txt
date -u >> $OUT/call3/env.txt
sed -i 's/^    (64, 64, 1),$/    (64, 64, 1),\n    (64, 160, 1),\n    (64, 192, 1),\n    (64, 224, 1),\n    (128, 160, 2),\n    (128, 224, 2),/' src/argus/kernels/matmul.py
grep -n -A14 '^TILES = (' src/argus/kernels/matmul.py >> $OUT/call3/env.txt
timeout -k 5 -s INT 540 python3 benchmarks/gemm_shapes.py --shapes 768,1536,1024 1536,1536,2048 256,7168,2048 \
    512,4096,4096 896,1792,1024 1280,1280,1280 640,2560,2048 2048,2048,2048 --sweep 6 --every-tile \
    --json $OUT/call3/tiles.json > $OUT/call3/tiles.txt 2>&1
echo "exit $?" >> $OUT/call3/tiles.txt
python3 - <<'PY' >> $OUT/call3/tiles.txt
import json, os
d = json.load(open(os.environ["OUT"] + "/call3/tiles.json"))
for r in d["rows"]:
    print(r["shape"], "cuBLAS", round(r["cublas_ms"], 4), "best", r["best"], round(r["best_ratio"], 3))
    for name, v in sorted(r["contenders"].items(), key=lambda x: x[1]["ms"]):
        print("   ", round(v["ratio"], 3), name)
PY
tail -n 100 $OUT/call3/tiles.txt | cut -c1-200
