#!/usr/bin/env bash
# device call 1 (session 63, issue #22): paged decoding with split keys merged in the kernel's own launch
# (`sdpa_paged.COMBINE_IN_KERNEL`) against the same split in two launches, cuDNN and FA2 on the same keys laid out
# contiguously, and argus's dense `sdpa`; interleaved, L2 flushed, 30 rounds; outputs checked against torch's math
# backend and merged == two launches bit for bit before and after the timed relaunches.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/paged1
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 280 python3 benchmarks/attention_paged.py --rounds 30 --json $R/paged.json > $R/paged.txt 2>&1
echo "exit $?" >> $R/paged.txt
cat $R/paged.txt | cut -c1-230
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf paged1.tgz paged1 && rm -rf paged1
