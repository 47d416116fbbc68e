#!/usr/bin/env bash
# device call 8 (session 26): the final tree: row-wise scales on the shapes (call 1 ran them under the old
# 1e-2 check, which stopped the K = 28672 row), and the block-scaled suite with the committed configuration choice
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; date -u;
  python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
timeout -k 10 200 python3 benchmarks/gemm_fp8.py --sweep 0 --scaling row --shapes 4096,4096,4096 8192,8192,8192 8192,28672,8192 8192,8192,28672 --json $OUT/fp8_row.json > $OUT/fp8_row.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_row.txt; grep -v "^  \|^- " $OUT/fp8_row.txt | cut -c1-250
timeout -k 10 300 python3 benchmarks/gemm_fp8.py --scaling block --json $OUT/fp8_block.json > $OUT/fp8_block.txt 2>&1
echo "bench exit $?" >> $OUT/fp8_block.txt; grep -v "^  \|^- " $OUT/fp8_block.txt | cut -c1-250
date -u >> $OUT/env.txt
