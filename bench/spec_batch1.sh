#!/usr/bin/env bash
# spec_batch1.sh RUNS BINARY... : issue 14's batch-1 point, the goal's command
# (`deepinfer bench stories260K-mtp ... --speculative-method mtp --rounds 11`:
# none, fixed and adaptive alternate within each round) run RUNS times per
# binary, the binaries alternating run by run, so a noisy machine slows them
# alike. Prints, per binary, the medians over all rounds of the per-round
# ratios fixed / none, adaptive / none (with its quartiles) and adaptive /
# fixed (docs/speculative.md, "Session 22"). Needs Python 3.
set -euo pipefail
runs=${1:?usage: spec_batch1.sh RUNS BINARY...}
shift
models=$(cd "$(dirname "$0")/../../shared/models" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq 1 "$runs"); do
  for n in $(seq 1 $#); do
    binary=${!n}
    "$binary" bench "$models/stories260K-mtp" --tokenizer "$models/gguf/stories260K.gguf" \
      --prompt "Once upon a time, there was a little girl named Lily. She loved to" --gen-tokens 200 \
      --batch 1 --threads 1 --speculative-method mtp --rounds 11 --json "$out/$n-$i.json" >/dev/null 2>&1
  done
done
python3 - "$out" "$runs" "$@" <<'PY'
import json, statistics, sys
out, runs, binaries = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for n, binary in enumerate(binaries, 1):
    none, fixed, adaptive, adaptive_fixed = [], [], [], []
    for i in range(1, runs + 1):
        points = json.load(open(f"{out}/{n}-{i}.json"))["speculative"]["points"]
        tps = {p["schedule"]: p["decode_tokens_per_second"] for p in points}
        none += tps["none"]
        fixed += [f / p for f, p in zip(tps["fixed"], tps["none"])]
        adaptive += [a / p for a, p in zip(tps["adaptive"], tps["none"])]
        adaptive_fixed += [a / f for a, f in zip(tps["adaptive"], tps["fixed"])]
    q = statistics.quantiles(adaptive, n=4)
    print(f"{binary}: {len(adaptive)} rounds, none {statistics.median(none):.0f} tok/s, "
          f"fixed/none {statistics.median(fixed):.3f}, adaptive/none {statistics.median(adaptive):.3f} "
          f"({q[0]:.3f}-{q[2]:.3f}), adaptive/fixed {statistics.median(adaptive_fixed):.3f}")
PY
