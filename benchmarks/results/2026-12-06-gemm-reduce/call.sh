#!/usr/bin/env bash
# device calls 1-3 (session 64, issue #20), as `CALL=reduce1 bash call.sh` (reduce2, reduce3): reducing GEMM epilogues (the product, its elementwise tail and a reduction of
# each row, the product never stored). The module's GPU test (matmul(reduce=) against torch at four shapes, five
# reductions, rows and columns), then benchmarks/gemm_reduce_epilogue.py: KernelBench level 2's GEMM + reduction
# chains at their sizes in fp32 and LLM-like bf16 rows, against eager, torch.compile and argus unfused, interleaved.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/${CALL:-reduce}
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
timeout -k 5 -s INT 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_gemm_reduce.py \
  -k gpu > $R/gputest.txt 2>&1
echo "exit $?" >> $R/gputest.txt
tail -5 $R/gputest.txt
timeout -k 5 -s INT ${BENCH_S:-400} python3 benchmarks/gemm_reduce_epilogue.py --rounds 20 --json $R/rows.json \
  ${ARGS:-} > $R/bench.txt 2>&1
echo "exit $?" >> $R/bench.txt
cat $R/bench.txt | cut -c1-230
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $R/env.txt 2>&1
cd $OUT && tar czf $(basename $R).tgz $(basename $R) && rm -rf $(basename $R)
