#!/usr/bin/env bash
# Session 68, call 1: the MoE up-projection split along K at decode (the plain grouped product of the gate-and-up
# weight in f32 slices, then `moe_glu_sum`; `moe.decode_up_split`) and the down-projection's splits over several
# waves (`moe.decode_plan`): the GPU tests of the grouped GEMMs and the layer; each product alone at 1 and 2 tokens
# under `choose`'s configuration, the layer's and three split forms, against torch._grouped_mm, interleaved.
export PYTHONPATH=$PWD/.z3:$PWD/src
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $OUT/env.txt
python3 -c "import torch; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version())" >> $OUT/env.txt
timeout 240 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/kernels/test_moe_layer.py tests/kernels/test_grouped.py -k gpu 2>&1 | tail -6 | tee $OUT/pytest.txt
timeout 330 python3 benchmarks/moe_decode_configs.py --tokens 1 2 --rounds 20 --config 64x128x64:8:s2 --config 64x128x64:8:s4 --config 64x256x64:4:s4 --json $OUT/configs.json 2>&1 | tee $OUT/configs.txt
