#!/usr/bin/env bash
# device call 10 (session 26): the block-scaled kernel's OVERLAP (K-block k - 1 promoted while K-block k's MMAs run,
# a third accumulator; two consumer warpgroups) against the plain loop, at 4096^3 and 8192^3. The OVERLAP variant
# (a kernel parameter and a fifth --configs field) was measured slower and removed: this script ran on that tree
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
for shape in 4096,4096,4096 8192,8192,8192; do
  timeout -k 10 200 python3 benchmarks/gemm_fp8_profile.py --shape $shape --configs 128,2,6,8 128,2,6,8,1 64,1,8,8,1 > $OUT/profile_${shape//,/x}.txt 2>&1
  echo "== $shape"; cut -c1-200 $OUT/profile_${shape//,/x}.txt
done
date -u >> $OUT/env.txt
