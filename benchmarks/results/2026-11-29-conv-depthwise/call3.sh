#!/usr/bin/env bash
# device call 3: why 84's judged wall clock is twice its event time (probe_wall.py)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site
timeout -k 10 -s INT 200 python3 benchmarks/results/2026-11-29-conv-depthwise/probe_wall.py > $OUT/probe_wall.log 2>&1
echo "probe exit $?" >> $OUT/probe_wall.log
