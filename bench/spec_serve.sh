#!/usr/bin/env bash
# spec_serve.sh [BUILD_DIR] [ROUNDS] [CONCURRENCY] [REQUESTS]: issue 14's "under load"
# point through the server: `deepinfer serve stories260K-mtp` with no
# speculation, --spec-schedule fixed and adaptive (mtp, K = 5), each loaded
# by `bench-serve` with CONCURRENCY requests in flight (default 64); the
# three servers alternate within each round, so a noisy machine slows them
# alike. REQUESTS per run defaults to 4 x CONCURRENCY; more (16 x) make the
# start of a run and the schedule's probes weigh less. Prints each run's output tok/s and, per round, fixed / none and
# adaptive / none (docs/speculative.md).
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
concurrency=${3:-64}
requests=${4:-$((4 * concurrency))}
models=$(cd "$(dirname "$0")/../../shared/models" && pwd)
port=18431
run() {  # run NAME [serve flags...]: one server, one load, its output tok/s
  local name=$1
  shift
  "$build/deepinfer" serve "$models/stories260K-mtp" --tokenizer "$models/gguf/stories260K.gguf" \
    --port $port --threads 1 "$@" >/dev/null 2>/tmp/spec_serve_$name.log &
  local pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  local out
  out=$("$build/deepinfer" bench-serve --url "http://127.0.0.1:$port" --num-requests "$requests" \
    --concurrency "$concurrency" --prompt-tokens 32 --output-tokens 128 --seed 1 2>/dev/null |
    sed -n 's/.*, \([0-9.]*\) output tok\/s.*/\1/p')
  kill -TERM $pid
  wait $pid || true
  echo "$out"
}
echo "round  load   none  fixed  adaptive  fixed/none  adaptive/none"
for r in $(seq 1 "$rounds"); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  none=$(run none)
  fixed=$(run fixed --speculative-method mtp --num-speculative-tokens 5 --spec-schedule fixed)
  adaptive=$(run adaptive --speculative-method mtp --num-speculative-tokens 5 --spec-schedule adaptive)
  awk -v r="$r" -v l="$load" -v n="$none" -v f="$fixed" -v a="$adaptive" \
    'BEGIN { printf "%5d  %4s  %6.0f %6.0f %8.0f  %10.3f  %13.3f\n", r, l, n, f, a, f / n, a / n }'
done
