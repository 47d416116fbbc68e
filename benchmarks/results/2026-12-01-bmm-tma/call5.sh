#!/usr/bin/env bash
# device call 5 (session 32, one H200): batched GEMM: the plan (the L2 rule), its direct-store form, three BLOCKS
# choices and the flat persistent grid (BATCH_GRID="flat": every matrix's tiles in order), interleaved with torch.bmm
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 240 python3 benchmarks/gemm_bmm.py > $OUT/bmm5.txt 2>&1; echo "exit $?" >> $OUT/bmm5.txt; grep -v "^compile" $OUT/bmm5.txt | cut -c1-260
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env.txt; date -u >> $OUT/env.txt
