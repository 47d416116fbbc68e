#!/bin/bash
# GEMM suites: the heuristic's configuration and the 6 the model ranks next, interleaved with cuBLAS (best of sweep
# = what an autotuner measuring the model's top 7 would pick). Run from the repository root on the GPU machine.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.sm,driver_version,power.limit --format=csv > $OUT/env.txt
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)" >> $OUT/env.txt
timeout 330 python3 benchmarks/gemm_shapes.py --suite issue --sweep 6 --json $OUT/issue.json > $OUT/issue.md 2>&1
timeout 200 python3 benchmarks/gemm_shapes.py --suite table --sweep 6 --json $OUT/table.json > $OUT/table.md 2>&1
tail -4 $OUT/issue.md; tail -4 $OUT/table.md
