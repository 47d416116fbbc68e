#!/usr/bin/env bash
# device call 8 (session 44, issue #20): the GEMM planner's tie between split configurations. Before, among the
# configurations within 2 % of the model's best the fewest splits won; now only unsplit over split counts as simpler
# (`mm.TIE_FEWEST_SPLITS` off). The four shapes of 360 (the suites and 300 random ones) whose choice that changes,
# each with the next configurations by estimate (the old choice among them), interleaved with cuBLAS.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch; print('torch', torch.__version__)"; date -u; } > $OUT/env8.txt 2>&1
timeout -k 10 400 python3 benchmarks/gemm_shapes.py --shapes 512,512,65536 123,8620,50345 98,220,20221 91,476,16847 \
  --sweep 4 --json $OUT/tie8.json > $OUT/tie8.txt 2>&1
echo "exit $?" >> $OUT/tie8.txt; grep -v "^compile" $OUT/tie8.txt | cut -c1-220 | tail -n 20
python3 - $OUT/tie8.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"] if isinstance(json.load(open(sys.argv[1])), dict) else json.load(open(sys.argv[1])):
    print(r["shape"], r["heuristic"], round(r["ratio"], 3), {k: round(v["ratio"], 3) for k, v in r["contenders"].items()})
PY
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env8.txt; date -u >> $OUT/env8.txt
