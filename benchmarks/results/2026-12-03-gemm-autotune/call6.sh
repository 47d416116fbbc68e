#!/usr/bin/env bash
# device call 6 (session 48, issue #20): a wider sweep at the shapes below 0.90x: the model's top 13, every tile
# shape's best-ranked candidate, each with the other K-block width (64 <-> 128), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call6
timeout -k 5 -s INT 400 python3 benchmarks/gemm_shapes.py --shapes 1000,1000,1000 256,7168,2048 512,512,65536 6000,6000,3000 --sweep 12 --every-tile --wide-k --json $OUT/call6/wide.json > $OUT/call6/wide.txt 2>&1
echo "exit $?" >> $OUT/call6/wide.txt
python3 - <<'PY' >> $OUT/call6/wide.txt
import json, os
d = json.load(open(os.environ["OUT"] + "/call6/wide.json"))
for r in d["rows"]:
    print(r["shape"], "cuBLAS", round(r["cublas_ms"], 4), "best", r["best"], round(r["best_ratio"], 3))
    for name, v in sorted(r["contenders"].items(), key=lambda x: x[1]["ms"]):
        print("   ", round(v["ratio"], 3), name)
PY
tail -n 60 $OUT/call6/wide.txt | cut -c1-200
