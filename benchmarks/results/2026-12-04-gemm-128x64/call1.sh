#!/usr/bin/env bash
# device call 1 (session 51, issue #20): does a 128x64 tile on two consumer warpgroups (cuBLAS's choice at 1000^3:
# nvjet 128x64_64x8) beat the planner's tiles where the grid is under two waves? The tile is added to
# `matmul.TILES` on the device copy only (this script's sed), then every tile shape's best-ranked candidate is
# timed, interleaved with cuBLAS, each checked against the f32 product first.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,clocks.mem,driver_version --format=csv > $OUT/call1/env.txt
python3 -c "import torch, sys; print(sys.version); print(torch.__version__, torch.version.cuda)" >> $OUT/call1/env.txt
sed -i 's/^    (64, 64, 1),$/    (64, 64, 1),\n    (128, 64, 2),/' src/argus/kernels/matmul.py
grep -n -A10 '^TILES = (' src/argus/kernels/matmul.py >> $OUT/call1/env.txt
timeout -k 5 -s INT 480 python3 benchmarks/gemm_shapes.py --shapes 1000,1000,1000 1024,1024,1024 768,1536,1024 256,7168,2048 512,4096,4096 1536,1536,2048 2048,2048,2048 4096,4096,4096 --sweep 6 --every-tile --json $OUT/call1/tiles.json > $OUT/call1/tiles.txt 2>&1
echo "exit $?" >> $OUT/call1/tiles.txt
python3 - <<'PY' >> $OUT/call1/tiles.txt
import json, os
d = json.load(open(os.environ["OUT"] + "/call1/tiles.json"))
for r in d["rows"]:
    print(r["shape"], "cuBLAS", round(r["cublas_ms"], 4), "best", r["best"], round(r["best_ratio"], 3))
    for name, v in sorted(r["contenders"].items(), key=lambda x: x[1]["ms"]):
        print("   ", round(v["ratio"], 3), name)
PY
tail -n 90 $OUT/call1/tiles.txt | cut -c1-220
