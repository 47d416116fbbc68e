#!/usr/bin/env bash
# device call 7 (session 26): the block-scaled kernel on 192-row tiles (three consumer warpgroups: the promotion's
# second accumulator fits in 152 registers) beside the 128-row tiles of two, on every shape of the suite
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 400 python3 benchmarks/gemm_fp8.py --scaling block --block-configs 192,3,5,8 192,3,5,16 --json $OUT/fp8_block.json > $OUT/fp8_block.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_block.txt; grep -v "^  \|^- " $OUT/fp8_block.txt | cut -c1-300
date -u >> $OUT/env.txt
