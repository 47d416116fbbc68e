#!/usr/bin/env bash
# device call 4 (session 44): the MoE layer at prefill sizes with the down-projection's TMA-store epilogue (`argus`,
# the default) and its direct store (`argus direct store`), interleaved with the composed PyTorch layer.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.limit --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env4.txt 2>&1
timeout -k 10 ${BENCH_S:-330} python3 benchmarks/moe_layer_bench.py --direct-store --rounds 8 --no-compile --routings balanced zipf \
  --json $OUT/layer4.json > $OUT/layer4.txt 2>&1
echo "exit $?" >> $OUT/layer4.txt; cat $OUT/layer4.txt | tail -n 50
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env4.txt; date -u >> $OUT/env4.txt
