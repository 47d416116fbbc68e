#!/usr/bin/env bash
# device calls (written in session 32, run in session 34 on nvidia-h200-x2): the scale-out sweep of issue #25 over 40 KernelBench level-1 problems
# (identity solutions), all three runs with this session's judge (large trials' host copies: one per trial, to
# page-locked memory). RUNS names the runs of this call; RESUME=--resume continues the unfinished run recorded in
# .scaleout-carry (an ignored folder carried here); STOP=N ends the command's segment cleanly after N problems.
# WIDEK=1 also runs the BK = 128 vs 64 GEMM comparison (../2026-12-01-gemm-swap/next-wide-k.sh) on GPU 1 while
# the 1-GPU run uses GPU 0. RAYCLUSTER=1 starts a Ray cluster on the machine first (`ray start --head`) and points
# the runs at it with --ray auto (a node of the cluster), as docs/scale-out.md tells a user to.
set -u
mkdir -p .site && tar xzf .rayw/ray-stripped.tgz -C .site \
  && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .rayw/*.whl || exit 1
export PYTHONPATH=$PWD/src:$PWD/.site PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; nproc; free -g | head -2; python3 -c "import torch,sys,ray; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'ray', ray.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env-${TAG:-a}.txt 2>&1
if [ "${WIDEK:-0}" = 1 ]; then
  SHAPES="1,4096,4096 4,11008,4096 8,8192,8192 32,4096,14336 96,7168,7168 64,8192,8192 48,1024,65536 512,512,65536 4096,4096,4096 1024,1024,1024"
  ( CUDA_VISIBLE_DEVICES=1 timeout -k 10 ${WIDEK_S:-420} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 1 \
      --budget 0.4 --swap --wide-k --json $OUT/wide_k.json > $OUT/wide_k.txt 2>&1; echo "exit $?" >> $OUT/wide_k.txt ) &
fi
RAY_ARG=""
if [ "${RAYCLUSTER:-0}" = 1 ]; then  # an existing cluster, as a user runs one: `ray start`, then --ray ADDRESS
  python3 -m ray.scripts.scripts start --head --port=6379 --num-gpus=2 --num-cpus=16 --include-dashboard=false \
    --disable-usage-stats > $OUT/ray-start-${TAG:-a}.log 2>&1 && RAY_ARG="--ray auto" \
    || echo "ray start failed: the ray-2gpu run uses a private instance" >> $OUT/ray-start-${TAG:-a}.log
fi
mkdir -p .scaleout && { [ -d .scaleout-carry ] && cp -n .scaleout-carry/* .scaleout/ 2>/dev/null; true; }
ONLY=1,2,3,4,5,6,7,10,12,13,14,15,16,18,19,20,21,22,23,24,25,26,27,30,31,32,33,34,35,38,39,41,42,43,44,45,46,47,48,49
timeout -k 20 -s INT ${RUN_S:-570} python3 benchmarks/scale_out.py --level 1 --only $ONLY --problems .kbdata/kernelbench \
  --trials 3 --reps 20 --timeout 150 --baselines ${BASELINES:-eager,compile} --runs ${RUNS:-local-1gpu} --out .scaleout ${RESUME:-} $RAY_ARG --stop-after ${STOP:-0} \
  > $OUT/run-${TAG:-a}.log 2>&1
echo "scale-out exit $?" >> $OUT/run-${TAG:-a}.log; grep -v "^  " $OUT/run-${TAG:-a}.log | tail -n 25
wait
[ -f $OUT/wide_k.txt ] && grep -v "^compile" $OUT/wide_k.txt | cut -c1-300 | tail -n 20
[ -n "$RAY_ARG" ] && python3 -m ray.scripts.scripts stop >> $OUT/ray-start-${TAG:-a}.log 2>&1
tar czf $OUT/scaleout-${TAG:-a}.tgz .scaleout; cp .scaleout/scale-out.md $OUT/ 2>/dev/null; date -u >> $OUT/env-${TAG:-a}.txt
