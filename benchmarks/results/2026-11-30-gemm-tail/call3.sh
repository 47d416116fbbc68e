#!/usr/bin/env bash
# device call 3: GEMM autotuning. The tuning GPU test, then `argus tune` on shapes the model's choice loses on (each
# configuration verified, checked, timed interleaved; the fastest recorded in the GEMM cache), then the shapes timed
# again with cuBLAS, the model's choice and the recorded configuration interleaved
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 ARGUS_CACHE_DIR=/tmp/argus-cache
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.sm,clocks.mem --format=csv; python3 -c "import torch,triton,sys; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'triton', triton.__version__, 'python', sys.version.split()[0])"; date -u; } > $OUT/env.txt 2>&1
timeout -k 10 -s INT 120 python3 -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels/test_gemm_tuning.py > $OUT/gputests.log 2>&1
echo "tests exit $?" >> $OUT/gputests.log; grep -E "^E  .{0,200}|^FAILED|passed|failed|exit" $OUT/gputests.log | cut -c1-300 | head -20
SHAPES="96,7168,7168 64,8192,8192 1024,1024,1024 768,768,3072"
timeout -k 10 -s INT 380 python3 -m argus tune $SHAPES --budget 4 --rounds 30 --json $OUT/tune.json > $OUT/tune.txt 2>&1
echo "tune exit $?" >> $OUT/tune.txt; grep -v ": verifying\|: timing" $OUT/tune.txt | cut -c1-220
timeout -k 10 -s INT 90 python3 benchmarks/gemm_shapes.py --shapes $SHAPES --sweep 0 --budget 0.5 --tuned --json $OUT/shapes.json > $OUT/shapes.txt 2>&1
echo "bench exit $?" >> $OUT/shapes.txt; grep -v "^compile" $OUT/shapes.txt | cut -c1-220
cp /tmp/argus-cache/tuned/gemm.json $OUT/gemm_cache.json 2>/dev/null
date -u >> $OUT/env.txt
