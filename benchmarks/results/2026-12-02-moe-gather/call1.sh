#!/usr/bin/env bash
# device call 1 (session 44): the gathered TMA load and the MoE up-projection reading each routed row's token through
# it: the GPU tests (the probe's rows against the interpreter's, the layer with and without the fused gather equal),
# then the layer at prefill sizes with the gather fused (`argus`) and with index_select first (`argus gather
# index_select`), interleaved with the composed PyTorch layer.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.limit --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env1.txt 2>&1
timeout -k 10 150 python3 -m pytest -q -p no:cacheprovider -n 4 tests/kernels/test_moe_gather.py tests/kernels/test_moe_layer.py -k gpu > $OUT/tests1.txt 2>&1
echo "exit $?" >> $OUT/tests1.txt; tail -n 15 $OUT/tests1.txt
timeout -k 10 ${BENCH_S:-360} python3 benchmarks/moe_layer_bench.py --fused-gather --rounds 8 --no-compile \
  --json $OUT/layer1.json > $OUT/layer1.txt 2>&1
echo "exit $?" >> $OUT/layer1.txt; cat $OUT/layer1.txt | tail -n 60
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env1.txt; date -u >> $OUT/env1.txt
