#!/usr/bin/env bash
# device call 1 (session 64, issue #20): 2-block clusters for 128-row two-consumer tiles split 8-15 ways, by K.
# Session 63 (benchmarks/results/2026-12-05-gemm-l2-split/, call 4) saw them pay at K >= 49152 and lose to the fused
# split at K = 12288. Twelve held-out shapes (seed 64, `benchmarks/results/2026-12-06-gemm-cluster8/shapes.py`)
# whose plan is such a tile unclustered, K in {16384, 24576, 32768, 49152, 98304}: the plan, the same configuration
# in clusters (unfused), and where the plan fuses, in clusters fused; interleaved with cuBLAS, checked against the
# f32 product before and after.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/${NAME:-cluster8}
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
ROWS=$(python3 benchmarks/results/2026-12-06-gemm-cluster8/${SHAPES:-shapes.py})
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
cd $OUT && tar czf $(basename $R).tgz $(basename $R) && rm -rf $(basename $R)
