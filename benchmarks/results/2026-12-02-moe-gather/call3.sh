#!/usr/bin/env bash
# device call 3 (session 44): the GPU tests of the gathered load (128-byte rows only now), the grouped GEMM and the
# MoE layer; then the grouped GEMM sweep with both epilogues (EPILOGUE "direct": every tile from registers through
# the expert-bounded window; "tma": full tiles through TMA stores, the expert's partial tile bounded), interleaved
# with torch._grouped_mm.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.limit --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env3.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/kernels/test_moe_gather.py tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu > $OUT/tests3.txt 2>&1
echo "exit $?" >> $OUT/tests3.txt; tail -n 6 $OUT/tests3.txt
timeout -k 10 ${BENCH_S:-330} python3 benchmarks/grouped_sweep.py --rounds 12 --epilogues direct tma \
  --json $OUT/sweep3.json > $OUT/sweep3.txt 2>&1
echo "exit $?" >> $OUT/sweep3.txt; cat $OUT/sweep3.txt | tail -n 75
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env3.txt; date -u >> $OUT/env3.txt
