#!/usr/bin/env bash
# device call 5 (session 44): the MoE GPU tests (edge shapes: one token, top-k of every expert, I = 8, H not a
# multiple of 64, 300 experts, no token), then the SwiGLU up-projection with its other store (`--tma-store`: full
# tiles through TMA stores) beside the direct one, interleaved with torch._grouped_mm + silu * mul.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.limit --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env5.txt 2>&1
timeout -k 10 200 python3 -m pytest -q -p no:cacheprovider -n 4 tests/kernels/test_moe_gather.py tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu > $OUT/tests5.txt 2>&1
echo "exit $?" >> $OUT/tests5.txt; tail -n 8 $OUT/tests5.txt
timeout -k 10 ${BENCH_S:-300} python3 benchmarks/swiglu_sweep.py --rounds 12 --tma-store --json $OUT/swiglu5.json > $OUT/swiglu5.txt 2>&1
echo "exit $?" >> $OUT/swiglu5.txt; cat $OUT/swiglu5.txt | tail -n 40
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env5.txt; date -u >> $OUT/env5.txt
