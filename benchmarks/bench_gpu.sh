#!/usr/bin/env bash
# The library's GEMM and attention kernels through `argus bench` on a GPU machine, with the baselines measured in
# the same run and the machine's ceilings: `benchmarks/bench_gpu.sh [KERNELS...]` (default: the expert kernels).
# Kernels and baselines are timed interleaved (`argus bench --timing`, default). Writes JSON, PNG, markdown and
# logs under $OUT (default ./out). Carries z3 from .whl/ when it is missing there.
set -u
out=${OUT:-out}; mkdir -p "$out"
if ! python3 -c "import z3" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}src
GEMM_SHAPES=${GEMM_SHAPES:-"M=2048,N=2048,K=2048;M=4096,N=4096,K=4096;M=8192,N=8192,K=8192;M=8192,N=7168,K=2048;M=4096,N=14336,K=4096;M=16384,N=4096,K=4096;M=2048,N=8192,K=28672"}
ATTN_SHAPES=${ATTN_SHAPES:-"BH=32,S=2048;BH=16,S=4096"}
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
} > "$out/env-bench.txt" 2>&1
for k in "${@:-gemm_warp_specialized flash_attention_fwd}"; do
  for name in $k; do
    case $name in
      flash*|*attention*) shapes=$ATTN_SHAPES ;;
      *) shapes=$GEMM_SHAPES ;;
    esac
    python3 -m argus bench "$name" --shapes "$shapes" --json "$out/bench-$name.json" --plot "$out/bench-$name.png" \
      --markdown "$out/bench-$name.md" \
      > "$out/bench-$name.log" 2>&1
    echo "exit $?" >> "$out/bench-$name.log"
    grep -v Warning "$out/bench-$name.log" | tail -30
  done
done
