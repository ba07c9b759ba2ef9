#!/usr/bin/env bash
# Sets up a fresh machine and runs every test: the lint rules (scripts/lint.sh:
# clang-format, include direction, clang-tidy), the engine, scheduler and
# thread-pool tests under ThreadSanitizer in a clang build, then one clang
# AddressSanitizer + UndefinedBehaviorSanitizer build (which, like every clang
# build, also checks the thread-safety annotations) of the whole suite and of
# the libFuzzer targets, a short libFuzzer smoke of each parser (FUZZ_SECONDS
# each, default 10), and the suite under the sanitizers (last, so ctest's
# summary closes the output). The suite runs once, under the sanitizers, to
# keep CI under 40 minutes on 2 cores. The Release build (the product, g++) is
# scripts/run.sh's job; for the Release suite run
# `bash scripts/build.sh && ctest --test-dir build`.
# Each phase prints its wall time, so a slow CI names its slow phase.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc)
started=$SECONDS
phase_started=$SECONDS
phase() {
  echo "== [$((SECONDS - phase_started)) s, total $((SECONDS - started)) s] $*" >&2
  phase_started=$SECONDS
}
# Sanitizer builds: clang at -O1 without debug info. They exist to run the
# suite under the checkers; reports still name every frame's function (the
# symbol table), and rebuilding with -g gives the lines. Against g++ -O1 -g1
# this takes the ASan+UBSan build from ~23 to ~14 minutes on 2 cores (clang
# generates code about 40% faster here). Kernels keep their own -O3.
san_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g0 -DNDEBUG")
phase "lint: clang-format, include direction, clang-tidy"
bash scripts/lint.sh build-lint

# The thread-safety annotations are checked by every clang build
# (-Werror=thread-safety), so the ASan build below checks them on every
# module; this one builds only what it runs.
phase "ThreadSanitizer (clang) build of the engine, scheduler, runner and thread-pool tests"
CC=clang CXX=clang++ cmake -S . -B build-tsan -G Ninja "${san_flags[@]}" -DDEEPINFER_SANITIZE_THREAD=ON >/dev/null
cmake --build build-tsan --target engine_test engine_speculation_test scheduler_test core_test runner_test
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --output-on-failure -j "$jobs" -R '^(EngineTest|Speculation|Modes/SpeculationLossless\..*_async|Scheduler|ThreadPool|MutexTest|RowSampler|ToForwardBatch|StepExecutor|TaskWorker)'

# The libFuzzer targets are built in the same tree (-DDEEPINFER_FUZZ=ON): their
# coverage-instrumented copies of the parsers are their own, everything else
# they link is the suite's ASan build.
phase "ASan+UBSan build (clang) of the whole suite and the libFuzzer targets"
CC=clang CXX=clang++ bash scripts/build.sh build-asan "${san_flags[@]}" -DDEEPINFER_SANITIZE=ON -DDEEPINFER_FUZZ=ON
phase "libFuzzer smoke run of the untrusted-input parsers (GGUF, safetensors, grammars, templates, configs, HTTP)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-10}" build-asan
phase "ASan+UBSan: ctest"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
phase "done"
