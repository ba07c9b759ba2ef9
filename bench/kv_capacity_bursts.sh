#!/usr/bin/env bash
# kv_capacity_bursts.sh [BUILD_DIR] [MODEL_DIR]: the capacity bursts of
# docs/kv-cache.md ("MLA and 16-bit KV, measured"): 16 requests of 3,500 prompt
# + 256 generated tokens submitted at once, the most running at one time and
# the preemptions, window-bounded vs --swa-full-kv and f32 vs f16 KV, on the
# swa-bench shapes (synthesized into MODEL_DIR on first use). One burst at a
# time; the counts do not depend on the machine's load, the wall times do.
set -euo pipefail
build=${1:-build}
models=${2:-/tmp/kv-bursts}
mkdir -p "$models"
for arch in qwen3 deepseek_v3; do
  [[ -f "$models/$arch-swa.gguf" ]] ||
    "$build/deepinfer" synth --arch "$arch" --preset swa-bench --seed 1 --out "$models/$arch-swa.gguf"
done
run() {
  echo "=== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*"
  "$build/src/engine/engine_bench" --burst 16 --prompt-tokens 3500 --gen-tokens 256 --threads 2 "$@" 2>&1 |
    grep '^burst'
}
for dtype in f32 f16; do
  for full in 0 1; do
    run --model "$models/qwen3-swa.gguf" --kv-cache-memory 134217728 --kv-cache-dtype $dtype --swa-full-kv $full
    run --model "$models/deepseek_v3-swa.gguf" --kv-cache-memory 83886080 --kv-cache-dtype $dtype --swa-full-kv $full
  done
done
