#!/usr/bin/env bash
# fuzz.sh [SECONDS] [BUILD_DIR]: builds the libFuzzer targets with clang and
# runs each for SECONDS (default 20) from its seed corpus. Any crash, leak or
# sanitizer report fails the run; the reproducer lands in BUILD_DIR/fuzz/.
#
# BUILD_DIR (default build-fuzz) is configured here unless it already has a
# CMake cache, in which case it must have been configured with clang and
# -DDEEPINFER_FUZZ=ON: CI fuzzes inside its ASan+UBSan build that way, so the
# libraries the targets link without coverage (di_model for the config
# target, di_io for the seed writer) are the ones that build compiled for the
# suite anyway, instead of a second copy.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
dir=${2:-build-fuzz}
if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  # -O1 with line tables only: a smoke run needs coverage and the sanitizers'
  # reports (functions and lines), not full debug info; this keeps the build,
  # most of this script's time, short.
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" \
    -DDEEPINFER_FUZZ=ON -DDEEPINFER_TESTS=OFF >/dev/null
elif ! grep -q '^DEEPINFER_FUZZ:BOOL=ON$' "$dir/CMakeCache.txt"; then
  echo "fuzz.sh: $dir is not configured with -DDEEPINFER_FUZZ=ON" >&2
  exit 2
fi
targets=(fuzz_gguf fuzz_safetensors fuzz_grammar fuzz_jinja fuzz_model_config fuzz_http)
cmake --build "$dir" --target "${targets[@]}" fuzz_seeds
fuzz_dir=$(cd "$dir/fuzz" && pwd)
for t in "${targets[@]}"; do
  corpus=$fuzz_dir/corpus_${t#fuzz_}
  mkdir -p "$corpus"
  echo "== $t for ${seconds}s" >&2
  (cd "$fuzz_dir" && ./"$t" -max_total_time="$seconds" -print_final_stats=1 "$corpus" 2>&1 | tail -n 3)
done
