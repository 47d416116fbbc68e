#!/usr/bin/env bash
# device call 3 (session 39): the experimental flattened-position convolution (argus.kernels.conv_im2col, TMA
# im2col loads) against cuDNN and the planned implicit kernel, benchmarks/conv_im2col_probe.py over
# conv_implicit_sweep.py's rows (--extra: inference batches too); its GPU correctness test first.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src:/tmp/site CUDA_VISIBLE_DEVICES=0
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"; date -u; } > $OUT/env3.txt 2>&1
timeout -k 10 480 python3 benchmarks/conv_im2col_probe.py --extra --json $OUT/probe.json > $OUT/probe.txt 2>&1
echo "exit $?" >> $OUT/probe.txt
grep -v "^compile" $OUT/probe.txt | cut -c1-250 | tail -n 40
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env3.txt; date -u >> $OUT/env3.txt
