#!/usr/bin/env bash
# KernelBench sweep on a GPU machine: `benchmarks/kernelbench_gpu.sh LEVEL [extra argus kernelbench options]`.
# Expects the problems at $ARGUS_KERNELBENCH_DIR (default .kbdata/kernelbench: a copy of ../shared/kernelbench
# that is carried to the machine, never committed) and, when z3 is missing there, wheels in .whl/.
# Writes the CSV, the SQLite store and the log under $OUT (default ./out), one worker per visible GPU.
set -u
level=${1:?level}; shift
out=${OUT:-out}; mkdir -p "$out"
if ! python3 -c "import z3" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}src
export ARGUS_KERNELBENCH_DIR=${ARGUS_KERNELBENCH_DIR:-.kbdata/kernelbench}
{
  date -u
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())"
  python3 -c "import triton; print('triton', triton.__version__)"
} > "$out/env-l$level.txt" 2>&1
python3 -m argus kernelbench --level "$level" --store "$out/l$level.sqlite" --csv "$out/l$level.csv" "$@" \
  > "$out/l$level.log" 2>&1
echo "exit $?" >> "$out/l$level.log"
tail -40 "$out/l$level.log"
