#!/usr/bin/env bash
# device call 1 (session 46, issue #23): the MoE grouped GEMM's lineage on the GPU. (1) the grouped GEMM GPU tests
# (the refactored expert kernels against torch); (2) every rung of the grouped lineage through the gate at the issue's
# three up-projection shapes, interleaved with torch._grouped_mm and the eager per-expert loop; (3) KLineage's walk
# of the expert, every step gated and timed at the task's first benchmark size (benchmarks/grouped_lineage.py).
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch,sys,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/call1/env.txt 2>&1
timeout -k 5 120 python3 -m pytest -q -p no:cacheprovider tests/kernels/test_grouped.py tests/kernels/test_moe_layer.py -k gpu > $OUT/call1/gpu_tests.txt 2>&1
echo "exit $?" >> $OUT/call1/gpu_tests.txt
timeout -k 5 -s INT 450 python3 benchmarks/grouped_lineage.py $OUT/call1 --tasks grouped_gemm --rounds 10 --walk 4 > $OUT/call1/run.log 2>&1
echo "exit $?" >> $OUT/call1/run.log
{ nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; date -u; } >> $OUT/call1/env.txt
cd $OUT && tar czf call1.tgz call1 && rm -rf call1/skills call1/*.json
tail -n 30 $OUT/call1/run.log | cut -c1-250; tail -n 3 $OUT/call1/gpu_tests.txt
