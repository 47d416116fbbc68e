#!/usr/bin/env bash
# Write `argus solve`'s solutions for KernelBench problems at their own sizes, on a machine without a GPU: each
# problem captured without data, its kernels generated and verified, the interpreter check skipped past 2^24
# elements (and said), no judging. Two problems at a time; a log and the JSON report per problem.
#
#   bash benchmarks/solve_generate.sh OUT_DIR [LEVEL] ID [ID ...]      (problems: $ARGUS_KERNELBENCH_DIR or ../shared/kernelbench)
#   then, on a GPU: python3 -m argus kernelbench --level LEVEL --solutions OUT_DIR/solutions --only IDS \
#       --trials 2 --reps 10 --timeout 150 --store OUT_DIR/kb.sqlite --csv OUT_DIR/kb.csv
set -uo pipefail
out="${1:?usage: solve_generate.sh OUT_DIR [LEVEL] ID [ID ...]}"
shift
level=1
if [[ "${1:-}" =~ ^level([123])$ ]]; then level="${BASH_REMATCH[1]}"; shift; fi
problems="${ARGUS_KERNELBENCH_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/shared/kernelbench}/level${level}"
python="${PYTHON:-python3}"
mkdir -p "$out/solutions" "$out/json" "$out/log"
for id in "$@"; do
  ls "$problems/${id}"_*.py 2>/dev/null | head -1
done | xargs -P 2 -I{} sh -c '
  name=$(basename "{}")
  "'"$python"'" -m argus solve "{}" --no-judge --device cpu --out "'"$out"'/solutions/$name" \
    --json "'"$out"'/json/$name.json" > "'"$out"'/log/$name.log" 2>&1
  grep -E "^level[0-9]/" "'"$out"'/log/$name.log" | tail -1'
