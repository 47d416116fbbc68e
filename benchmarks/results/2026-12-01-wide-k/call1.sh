#!/usr/bin/env bash
# device call 1 (session 32, one H200): problem 45's judge with this session's host copies (was 163.8 s, 105.6 s
# of it in to_host), the judge's defence tests on the GPU, then K-blocks of two swizzle spans (BK = 128) against
# the BK = 64 plans at skinny and square shapes, interleaved with cuBLAS (`gemm_shapes.py --swap --wide-k`)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; nproc; free -g | head -2; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env1.txt 2>&1
CUDA_VISIBLE_DEVICES=0 timeout -k 10 -s INT 150 python3 benchmarks/gate_cost.py --only 45 --trials 3 --reps 20 --top 30 > $OUT/gate_cost_45.txt 2>&1
echo "exit $?" >> $OUT/gate_cost_45.txt; grep -v "^compile" $OUT/gate_cost_45.txt | cut -c1-180 | head -n 16
SHAPES="1,4096,4096 4,11008,4096 8,8192,8192 32,4096,14336 96,7168,7168 64,8192,8192 48,1024,65536 512,512,65536 4096,4096,4096 1024,1024,1024"
CUDA_VISIBLE_DEVICES=0 timeout -k 10 ${WIDEK_S:-360} python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 1 \
  --budget 0.4 --swap --wide-k --json $OUT/wide_k.json > $OUT/wide_k.txt 2>&1
echo "exit $?" >> $OUT/wide_k.txt; grep -v "^compile" $OUT/wide_k.txt | cut -c1-260 | tail -n 24
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env1.txt; date -u >> $OUT/env1.txt
