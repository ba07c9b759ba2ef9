#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the lint rules (scripts/lint.sh:
# clang-format, include direction, clang-tidy), a short libFuzzer smoke of each
# parser (FUZZ_SECONDS each, default 10), the engine, scheduler and thread-pool
# tests under ThreadSanitizer in a clang build (which also checks the
# thread-safety annotations), then the whole suite under AddressSanitizer +
# UndefinedBehaviorSanitizer (last, so ctest's summary closes the output). The
# suite runs once, under the sanitizers, to keep CI under 30 minutes on 2
# cores. The Release build (the product) is scripts/run.sh's job; for the
# Release suite run `bash scripts/build.sh && ctest --test-dir build`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc)
# Sanitizer builds at -O1 with minimal debug info: they exist to run the
# suite under the checkers, and this halves their compile time in CI.
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
echo "== lint: clang-format, include direction, clang-tidy" >&2
bash scripts/lint.sh build-lint

echo "== libFuzzer smoke run of the untrusted-input parsers (GGUF, safetensors, grammars)" >&2
bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}"

echo "== ThreadSanitizer (clang, -Werror=thread-safety) build of the engine, scheduler, runner and thread pool" >&2
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja "${san_flags[@]}" -DDEEPINFER_SANITIZE_THREAD=ON >/dev/null
cmake --build build-tsan --target engine_test engine_speculation_test scheduler_test core_test runner_test di_grammar di_server
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R '^(EngineTest|Speculation|Scheduler|ThreadPool|MutexTest|RowSampler|ToForwardBatch|StepExecutor|TaskWorker)'

echo "== ASan+UBSan build and tests" >&2
bash scripts/build.sh build-asan "${san_flags[@]}" -DDEEPINFER_SANITIZE=ON
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
