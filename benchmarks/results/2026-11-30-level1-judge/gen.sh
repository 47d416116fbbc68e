#!/usr/bin/env bash
# solve both halves of level 1's 39 problems on the CPU at KernelBench's own sizes (no judge)
cd /work/main
A=5,19,20,21,22,25,26,27,30,31,32,23,24,88,94,95,98,99,100
B=33,34,35,38,39,41,42,43,44,45,46,47,48,49,51,52,89,91,92,93
for h in a b; do
  ids=$A; [ $h = b ] && ids=$B
  .venv/bin/python -m argus kernelbench --generate --no-judge --problems ../shared/kernelbench --level 1 --only $ids \
    --solutions .gen29/$h/solutions --store .gen29/$h/kb.sqlite --workers 2 --json .gen29/$h/generated.json > .gen29/gen-$h.log 2>&1
  echo "$h exit $?" >> .gen29/gen.done
done
