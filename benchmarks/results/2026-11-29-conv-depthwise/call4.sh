#!/usr/bin/env bash
# device call 4: is the judge's wall-clock excess (FLAG_UNSYNCED_WORK on 84, and on five convolutions of session 21)
# the candidate's or the sandbox's? 84 judged three ways in the sandbox, eager beside each: the identity solution
# (the problem's own Model, cuDNN), argus's solution as generated, and argus's solution with its output allocated
# once and reused (the only change: the forward's torch.empty)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
mkdir -p /tmp/ours /tmp/reused
cp .gen22/solutions/84_*.py /tmp/ours/
cp .gen22/solutions/84_*.py /tmp/reused/
python3 - <<'PY'
import glob
p = glob.glob('/tmp/reused/84_*.py')[0]
s = open(p).read()
old = "        convolution = convolution_0.empty_output(x, p_conv2d_weight)\n"
assert old in s
s = s.replace(old, "        global _OUT\n        if _OUT is None:\n            _OUT = convolution_0.empty_output(x, p_conv2d_weight)\n        convolution = _OUT\n")
s = s.replace("class ModelNew(", "_OUT = None\n\n\nclass ModelNew(", 1)
open(p, 'w').write(s)
PY
for kind in identity ours reused; do
  sol=/tmp/$kind; [ $kind = identity ] && sol=identity
  timeout -k 20 -s INT 150 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 --solutions $sol \
    --only 84 --trials 1 --reps 10 --timeout 140 --baselines eager --store /tmp/$kind.sqlite --csv $OUT/$kind.csv > $OUT/$kind.log 2>&1
  echo "$kind exit $?" >> $OUT/$kind.log
  python3 - /tmp/$kind.sqlite $kind >> $OUT/walls.txt <<'PY'
import re, sqlite3, sys
for key, payload in sqlite3.connect(sys.argv[1]).execute("select key, payload from results"):
    for m in re.finditer(r'"median_ms": ([0-9.]+)[^{}]*?"wall_ms": ([0-9.]+)', payload):
        print(sys.argv[2], key[-40:], "events", m.group(1), "wall", m.group(2))
    print(sys.argv[2], "flags", re.findall(r'FLAG_[A-Z_]+', payload))
PY
done
