#!/usr/bin/env bash
# fuzz.sh [SECONDS]: builds the libFuzzer targets with clang and runs each for
# SECONDS (default 20) from its seed corpus. Any crash, leak or sanitizer
# report fails the run; the reproducer lands in build-fuzz/fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
# -O1 with line tables only: a smoke run needs coverage and the sanitizers'
# reports (functions and lines), not full debug info; this keeps the build,
# most of this script's time in CI, short.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
  -DDEEPINFER_FUZZ=ON -DDEEPINFER_TESTS=OFF >/dev/null
targets=(fuzz_gguf fuzz_safetensors fuzz_grammar fuzz_jinja fuzz_model_config fuzz_http)
cmake --build build-fuzz --target "${targets[@]}" fuzz_seeds
for t in "${targets[@]}"; do
  corpus=build-fuzz/fuzz/corpus_${t#fuzz_}
  mkdir -p "$corpus"
  echo "== $t for ${seconds}s" >&2
  (cd build-fuzz/fuzz && ./"$t" -max_total_time="$seconds" -print_final_stats=1 "../../$corpus" 2>&1 | tail -n 3)
done
