#!/usr/bin/env bash
# device call 1 (session 30, nvidia-h200-x2): Ray unpacked into .site (an ignored folder the machine keeps between
# calls; the wheel without its Java jar, dashboard client and rllib, carried as .rayw: the whole wheel is over the
# carry limit), a check that Ray starts with both GPUs, then the sweep's first run: the local pool on one GPU
set -u
mkdir -p .site && tar xzf .rayw/ray-stripped.tgz -C .site \
  && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .rayw/*.whl || exit 1
export PYTHONPATH=$PWD/src:$PWD/.site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; nproc; python3 -c "import torch,sys,ray; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'ray', ray.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 120 python3 -c "import ray; ray.init(num_gpus=2, include_dashboard=False); print(ray.cluster_resources()); ray.shutdown()" > $OUT/ray-check.txt 2>&1
echo "ray check exit $?" >> $OUT/ray-check.txt; tail -n 3 $OUT/ray-check.txt
timeout -k 20 -s INT ${RUN_S:-480} python3 benchmarks/scale_out.py --level 1 --only ${ONLY:-1-40} --problems .kbdata/kernelbench \
  --trials 3 --reps 20 --timeout 150 --runs ${RUNS:-local-1gpu} --out .scaleout > $OUT/run.log 2>&1
echo "scale-out exit $?" >> $OUT/run.log; tail -n 12 $OUT/run.log
cp .scaleout/*.json .scaleout/*.md .scaleout/*.csv $OUT/ 2>/dev/null; date -u >> $OUT/env.txt
