#!/usr/bin/env bash
# device calls (session 31, nvidia-h200-x2): the scale-out sweep over 40 KernelBench level-1 problems (identity
# solutions) with the sandbox wire's CUDA IPC: RUNS names the runs of this call (local-1gpu; then
# local-2gpu,ray-2gpu). Runs recorded by an earlier call come back in through .scaleout-carry (an ignored folder
# carried here) so that the report covers all three; everything under .scaleout goes back in one tarball.
set -u
mkdir -p .site && tar xzf .rayw/ray-stripped.tgz -C .site \
  && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .rayw/*.whl || exit 1
export PYTHONPATH=$PWD/src:$PWD/.site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; nproc; free -g | head -2; python3 -c "import torch,sys,ray; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'ray', ray.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env-${TAG:-a}.txt 2>&1
mkdir -p .scaleout && { [ -d .scaleout-carry ] && cp -n .scaleout-carry/* .scaleout/ 2>/dev/null; true; }
ONLY=1,2,3,4,5,6,7,10,12,13,14,15,16,18,19,20,21,22,23,24,25,26,27,30,31,32,33,34,35,38,39,41,42,43,44,45,46,47,48,49
timeout -k 20 -s INT ${RUN_S:-560} python3 benchmarks/scale_out.py --level 1 --only $ONLY --problems .kbdata/kernelbench \
  --trials 3 --reps 20 --timeout 150 --runs ${RUNS:-local-1gpu} --out .scaleout ${RESUME:-} > $OUT/run-${TAG:-a}.log 2>&1
echo "scale-out exit $?" >> $OUT/run-${TAG:-a}.log; grep -v "^  " $OUT/run-${TAG:-a}.log | tail -n 25
tar czf $OUT/scaleout-${TAG:-a}.tgz .scaleout; cp .scaleout/scale-out.md $OUT/ 2>/dev/null; date -u >> $OUT/env-${TAG:-a}.txt
