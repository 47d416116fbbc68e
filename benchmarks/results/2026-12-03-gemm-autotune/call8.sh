#!/usr/bin/env bash
# device call 8 (session 48, issue #20): the K-block width question of call 6 over every suite: each shape's
# heuristic configuration and its twin with the other K-block width (BK 64 <-> 128, the stages doubled or halved),
# interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
mkdir -p $OUT/call8
timeout -k 5 -s INT 500 python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --wide-k --budget 0.4 --json $OUT/call8/widek.json > $OUT/call8/widek.txt 2>&1
echo "exit $?" >> $OUT/call8/widek.txt
python3 - <<'PY' >> $OUT/call8/widek.txt
import json, os
d = json.load(open(os.environ["OUT"] + "/call8/widek.json"))
better = []
for r in d["rows"]:
    c = r["contenders"]
    if len(c) < 2 or not r["ratio"]:
        continue
    twin = [k for k in c if k != r["heuristic"]]
    if not twin:
        continue
    t = twin[0]
    better.append((c[t]["ratio"] / r["ratio"], r["shape"], r["heuristic"], t, r["ratio"], c[t]["ratio"]))
better.sort(reverse=True)
print("twin / heuristic, shape, heuristic, twin, x cuBLAS heuristic, x cuBLAS twin")
for row in better:
    print(f"{row[0]:.3f} {row[1]} {row[2]} | {row[3]} {row[4]:.3f} {row[5]:.3f}")
PY
tail -n 70 $OUT/call8/widek.txt | cut -c1-200
