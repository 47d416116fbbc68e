#!/usr/bin/env bash
# device call 1 (session 30, single H200): the attention lineage's mma.sync rung through the gate against SDPA (bf16
# in, D = 64), the rung below it again in the same call, and the lineage's GPU tests
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
for k in attention_mma_sync attention_smem_tiled; do
  timeout -k 5 -s INT 90 python3 -m argus bench $k --shapes "BH=16,S=2048" --trials 1 --reps 5 --markdown $OUT/$k.md > $OUT/$k.log 2>&1
  echo "exit $?" >> $OUT/$k.log
done
timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider -n 0 --tb=short tests/kernels/test_attention_lineage.py -k gpu > $OUT/tests.log 2>&1
echo "tests exit $?" >> $OUT/tests.log
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
tail -n 12 $OUT/*.md $OUT/*.log
