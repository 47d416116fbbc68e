#!/usr/bin/env bash
# device call 2 (session 46, issue #23): after call 1 the per-expert grid's blocks were reordered (column tiles
# fastest: each expert's tiles row by row, the order the units and the untiled persistent grid take), so that each
# step of the lineage changes one mechanism and not the tile order with it. (1) the per-expert grid (grouped and
# SwiGLU) at the three shapes through the gate, interleaved with torch._grouped_mm (+ SwiGLU) and eager;
# (2) KLineage's walk again (4 steps at Mixtral's shape), its skills admitted on the held-out SwiGLU family.
set -u
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl-z3/*.whl > /dev/null 2>&1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1
mkdir -p $OUT/call2
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,power.draw --format=csv; python3 -c "import torch,sys,z3; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'z3', z3.get_version_string(), 'python', sys.version.split()[0])"; date -u; } > $OUT/call2/env.txt 2>&1
timeout -k 5 -s INT 560 python3 benchmarks/grouped_lineage.py $OUT/call2 --tasks grouped_gemm_expert_grid \
  grouped_gemm_swiglu_expert_grid --rounds 10 --walk 4 --admit $OUT/call2/skills > $OUT/call2/run.log 2>&1
echo "exit $?" >> $OUT/call2/run.log
{ nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; date -u; } >> $OUT/call2/env.txt
cd $OUT && tar czf call2.tgz call2 && rm -rf call2/*.json call2/skills
tail -n 40 $OUT/call2/run.log | cut -c1-300
