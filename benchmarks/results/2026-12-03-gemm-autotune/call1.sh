#!/usr/bin/env bash
# device call 1 (session 48, issue #20 "also with autotuning"): the bf16 suite of the issue and its opening table,
# the heuristic's configuration and the 6 the model ranks next (an autotuner over the model's top 7 picks the
# fastest of them), interleaved with cuBLAS (torch.matmul) in one process, L2 flushed every round.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call1
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch,sys,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/call1/env.txt 2>&1
timeout -k 5 -s INT 340 python3 benchmarks/gemm_shapes.py --suite issue --sweep 6 --json $OUT/call1/issue.json > $OUT/call1/issue.txt 2>&1
echo "exit $?" >> $OUT/call1/issue.txt
timeout -k 5 -s INT 200 python3 benchmarks/gemm_shapes.py --suite table --sweep 6 --json $OUT/call1/table.json > $OUT/call1/table.txt 2>&1
echo "exit $?" >> $OUT/call1/table.txt
{ nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; date -u; } >> $OUT/call1/env.txt
cd $OUT && tar czf call1.tgz call1
tail -n 40 $OUT/call1/issue.txt | cut -c1-220; tail -n 16 $OUT/call1/table.txt | cut -c1-220
