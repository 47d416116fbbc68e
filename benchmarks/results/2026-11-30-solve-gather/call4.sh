#!/usr/bin/env bash
# device call 4: the rows kernel with its own thread-value layout (up to 512 columns a tile, four 16-byte loads in
# flight a thread), across shapes; its tile swept on 95; 95 judged at KernelBench's size
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site ARGUS_KERNELBENCH_DIR=$PWD/.kbdata/kernelbench
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
KB=.kbdata/kernelbench/level1
timeout -k 10 -s INT 200 python3 benchmarks/class_loss_gpu.py --rounds 20 --out /tmp/cl > $OUT/class_loss.md 2>&1
echo "bench exit $?" >> $OUT/class_loss.md
timeout -k 10 -s INT 60 python3 benchmarks/solution_policy_gpu.py $KB/95_CrossEntropyLoss.py .gen27/solutions/95_CrossEntropyLoss.py \
  --kernel indexing_0 --grid "BM=4;BN=128,256,1024" --rounds 10 > $OUT/sweep95.md 2>&1
echo "sweep exit $?" >> $OUT/sweep95.md
timeout -k 20 -s INT 100 python3 -m argus kernelbench --problems .kbdata/kernelbench --level 1 \
  --solutions .gen27/solutions --only 95 --trials 2 --reps 10 --timeout 90 --csv $OUT/kb.csv > $OUT/kb.log 2>&1
echo "judge exit $?" >> $OUT/kb.log
timeout -k 10 -s INT 100 python3 -m pytest -q -p no:cacheprovider tests/frontend/test_solve_gpu.py -k "cross_entropy or partial_solution" > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log
date -u >> $OUT/env.txt
