python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv > $OUT/env-$1.txt
P="gemm_residual_naive@M=4096,N=4096,K=4096 gemm_residual_naive@M=2048,N=8192,K=1024 gemm_residual_naive@M=8192,N=2048,K=2048"
S=benchmarks/results/2026-11-21-h200-agent-klineage/skills
shift
B=$1; T=$2; shift 2
for arm in "$@"; do
  timeout $T python3 benchmarks/sweep_gpu.py --arm $arm --budget $B --skills $S --out $OUT $P > $OUT/${arm//+/_}.log 2>&1; echo "$arm rc=$?"
done
grep -h '"label"' $OUT/*.log | cut -c1-300
