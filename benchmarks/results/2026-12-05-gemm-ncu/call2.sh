#!/usr/bin/env bash
# device call 2 (session 58, issue #20): the issue's bf16 and FP8 suites on one GPU in one call. bf16: the heuristic with
# split slices stored through TMA (`matmul.SPLIT_TMA_STORE`) and, for every shape whose choice it changes, the same
# configuration with direct stores (--split-direct). FP8 (e4m3, per-tensor scales): the issue's two long shapes, each
# with the model's next two configurations (the split tails the model ranks near the unsplit tile).
# `call2.sh bf16` runs the bf16 half alone, `call2.sh fp8` the FP8 half (default: both).
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
R=$OUT/call2
PART=${1:-bf16,fp8}
mkdir -p $R
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
  python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"
  date -u; } > $R/env.txt 2>&1
if [[ $PART == *bf16* ]]; then
timeout -k 5 -s INT 150 python3 benchmarks/gemm_shapes.py --suite issue --sweep 0 --split-direct \
    --json $R/issue.json > $R/issue.txt 2>&1; echo "exit $?" >> $R/issue.txt
fi
if [[ $PART == *fp8* ]]; then
timeout -k 5 -s INT 110 python3 benchmarks/gemm_fp8.py --shapes 8192,8192,28672 8192,28672,8192 --sweep 2 --budget 0.5 --json $R/fp8.json > $R/fp8.txt 2>&1; echo "exit $?" >> $R/fp8.txt
fi
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv >> $R/env.txt
[[ -f $R/issue.txt ]] && grep -h -E "geometric|exit|WRONG|Error|refused|^ +[0-9]+x" $R/issue.txt | cut -c1-200
[[ -f $R/fp8.txt ]] && grep -h -v "^    " $R/fp8.txt | tail -12 | cut -c1-220
cd $OUT && tar czf call2.tgz call2 && rm -rf call2
