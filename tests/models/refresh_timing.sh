#!/usr/bin/env bash
# The cost model's final figures on this machine, for a quiet window (a benchmark, not a test):
#   1. `spiralpir calibrate` (the quick default calibration) into build/refresh/profile.json;
#   2. every checked-in build and three shapes no calibration saw, at 1 and 2 threads,
#      predicted (that profile, and the shipped one) vs measured (tests/models/bench_accuracy.py;
#      2 threads: against the wall time and the bench's uncontended estimate, which a busy machine
#      does not stretch), the measurements kept in build/refresh/timing/ (timing references);
#      two trials per bench process (each figure a median of two), two processes (the minimum);
#   3. which checked-in builds' plans the new profile would change (nothing is regenerated).
# With --ship, the new profile becomes the shipped one (optimizer/models/profiles/default.json)
# and the measurements the timing references (tests/models/data/timing/); then set the band of
# tests/models/test_timing.py from the printed ratios of the shipped profile.
#
#   tests/models/refresh_timing.sh [--ship]
#
# Runs from the repository root with spiralpir installed (pip install -e .); ~10 minutes on an
# idle 2-core machine once the builds exist (the first run compiles them, ~10 more minutes).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build/refresh
mkdir -p "$out"
python=${PYTHON:-python3}
"$python" -m spiralpir.optimizer.cli calibrate --out "$out/profile.json"
"$python" tests/models/bench_accuracy.py --profile "$out/profile.json" --repeat 2 --trials 2 \
  --store "$out/timing" --json "$out/rows.json"
"$python" tests/models/bench_accuracy.py --plans --profile "$out/profile.json"
if [[ "${1:-}" == "--ship" ]]; then
  cp "$out/profile.json" optimizer/models/profiles/default.json
  rm -f tests/models/data/timing/*.json
  cp "$out"/timing/*.json tests/models/data/timing/
  echo "shipped $out/profile.json and $(ls "$out"/timing/*.json | wc -l) timing references"
fi
