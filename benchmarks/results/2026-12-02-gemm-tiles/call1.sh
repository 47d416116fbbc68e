#!/usr/bin/env bash
# device call 1 (session 43): the 192-row (three consumer warpgroups) and 192-column tiles. The mid-size suite
# with every tile shape's first candidate, the model's next three and the heuristic among the previous tiles
# (`--every-tile --previous-tiles`); then every other suite, the heuristic against the previous tiles' choice.
# All interleaved with cuBLAS (torch.matmul) in one process per suite.
set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
{ nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'python', sys.version.split()[0])"; date -u; } > $OUT/env1.txt 2>&1
timeout -k 10 ${MID_S:-250} python3 benchmarks/gemm_shapes.py --suite mid --sweep 3 --budget 0.5 --every-tile \
  --previous-tiles --json $OUT/mid.json > $OUT/mid.txt 2>&1
echo "exit $?" >> $OUT/mid.txt; grep -v "^compile" $OUT/mid.txt | cut -c1-220 | tail -n 45
timeout -k 10 ${ALL_S:-290} python3 benchmarks/gemm_shapes.py --suite all --sweep 0 --budget 0.4 --previous-tiles \
  --json $OUT/all.json > $OUT/all.txt 2>&1
echo "exit $?" >> $OUT/all.txt; grep -v "^compile" $OUT/all.txt | cut -c1-200 | tail -n 64
nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >> $OUT/env1.txt; date -u >> $OUT/env1.txt
