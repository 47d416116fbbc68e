#!/usr/bin/env bash
# device call (session 32, one H200): the Ray path on a real GPU before the 2-GPU runs: `ray start --head
# --num-gpus=1`, then `argus kernelbench --ray auto` on two level-1 problems (identity solutions)
set -u
mkdir -p .site && tar xzf .rayw/ray-stripped.tgz -C .site \
  && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target .site .rayw/*.whl || exit 1
export PYTHONPATH=$PWD/src:$PWD/.site PYTHONUNBUFFERED=1
python3 -m ray.scripts.scripts start --head --port=6379 --num-gpus=1 --num-cpus=8 --include-dashboard=false \
  --disable-usage-stats > $OUT/ray-start.log 2>&1; echo "ray start exit $?" >> $OUT/ray-start.log
timeout -k 10 240 python3 -m argus kernelbench --level 1 --only 1,19 --trials 2 --reps 5 --timeout 120 --ray auto \
  --problems .kbdata/kernelbench --csv $OUT/kb.csv --json $OUT/kb.json > $OUT/kb.log 2>&1
echo "kernelbench exit $?" >> $OUT/kb.log
python3 -m ray.scripts.scripts stop >> $OUT/ray-start.log 2>&1
tail -n 5 $OUT/ray-start.log; tail -n 25 $OUT/kb.log | cut -c1-220; cat $OUT/kb.csv | cut -c1-300
