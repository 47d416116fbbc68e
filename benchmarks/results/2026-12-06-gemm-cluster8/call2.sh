#!/usr/bin/env bash
# device call 2 (session 64, issue #20): `matmul.fused_cluster` (a fused split of 8 or more on 128-row two-consumer
# tiles runs in 2-block clusters) on ten new held-out shapes (seed 65, `shapes2.py`): the heuristic (now clustered)
# against the same plan unclustered, interleaved with cuBLAS, checked against the f32 product before and after.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/cluster8b
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
ROWS=$(python3 benchmarks/results/2026-12-06-gemm-cluster8/shapes2.py)
echo "$ROWS" > $R/rows.txt
jobs=""
for r in $ROWS; do s=${r%%:*}; rest=${r#*:}; jobs="$jobs $s"; for c in ${rest//:/ }; do jobs="$jobs $s:$c"; done; done
timeout 240 python3 benchmarks/gemm_precompile.py $jobs --jobs 16 > $R/precompile.txt 2>&1; tail -2 $R/precompile.txt
for r in $ROWS; do
  s=${r%%:*}; rest=${r#*:}
  timeout -k 5 -s INT 60 python3 benchmarks/gemm_config_probe.py $s ${rest//:/ } --rounds 100 \
    --json $R/s${s//,/_}.json > $R/s${s//,/_}.txt 2>&1; echo "exit $?" >> $R/s${s//,/_}.txt
  echo "== $s"; grep -h -E "x cuBLAS|cuBLAS [0-9]|exit|WRONG|refused" $R/s${s//,/_}.txt | cut -c1-160
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf cluster8b.tgz cluster8b && rm -rf cluster8b
