#!/usr/bin/env bash
# device call 2 (session 46, issue #23): the SwiGLU up-projection's lineage through the gate at the three
# shapes (interleaved with torch._grouped_mm + SwiGLU and the eager per-expert loop), and the skills mined by call 1's
# walk replayed on that held-out lineage (admission, at the grouped_swiglu task's first benchmark size).
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch,sys,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/call2/env.txt 2>&1
timeout -k 5 -s INT 560 python3 benchmarks/grouped_lineage.py $OUT/call2 --tasks grouped_swiglu --rounds 10 \
  --admit benchmarks/results/2026-12-03-moe-lineage/call1/skills > $OUT/call2/run.log 2>&1
echo "exit $?" >> $OUT/call2/run.log
{ nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; date -u; } >> $OUT/call2/env.txt
cd $OUT && tar czf call2.tgz call2 && rm -rf call2/*.json
tail -n 30 $OUT/call2/run.log | cut -c1-250
