#!/usr/bin/env bash
# device call 1: how fast one elementwise pass can go (probes, eager, argus's generated ModelNew of 19 and 21)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys,cupy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cupy', cupy.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 400 python3 benchmarks/pointwise_bandwidth.py --solutions .gen29/a/solutions --rounds 15 --json $OUT/pw.json > $OUT/pw.txt 2>&1
echo "exit $?" >> $OUT/pw.txt
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
cat $OUT/pw.txt
