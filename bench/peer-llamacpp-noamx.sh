#!/usr/bin/env bash
# The llama.cpp peer of ../shared/bench/peer-llamacpp.sh (same source bundle, node-llama-cpp@3.22.1,
# same native -march=native build) with the AMX code compiled out, for machines where llama.cpp's AMX
# path crashes: on the Intel Xeon (AMX) VMs of 2026-12, llama-bench dies with SIGILL/SIGSEGV at
# `ldtilecfg` inside ggml_backend_amx_mul_mat (llama.cpp issue 20824 / PR 26954: the tile
# configuration is built on the stack and optimized away, and worker threads never request the
# XTILEDATA permission). -mno-amx-* clear __AMX_INT8__, so ggml's AMX buffer type is not built; its
# AVX-512 / VNNI kernels and weight repacking stay. Prints the folder of binaries, like the original:
#   LLAMA_CPP_BIN=$(bench/peer-llamacpp-noamx.sh) bench/vs_llamacpp.sh --model M
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${DEEPINFER_PEER_NOAMX_CACHE:-$HOME/.cache/deepinfer-peer-noamx}
bin=$cache/llama.cpp/build/bin
if [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-batched-bench" ]; then
  # The source bundle comes from the shared peer's npm install (it downloads nothing else).
  src_cache=${DEEPINFER_PEER_CACHE:-$HOME/.cache/deepinfer-peer}
  bundle=$src_cache/node_modules/node-llama-cpp/llama/gitRelease.bundle
  if [ ! -f "$bundle" ]; then
    peer=$here/../../shared/bench/peer-llamacpp.sh
    [ -x "$peer" ] || peer=/work/shared/bench/peer-llamacpp.sh
    DEEPINFER_PEER_CACHE=$src_cache bash "$peer" >/dev/null
  fi
  mkdir -p "$cache"; rm -rf "$cache/llama.cpp"
  git clone -q "$bundle" "$cache/llama.cpp"
  noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cmake -S "$cache/llama.cpp" -B "$cache/llama.cpp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  cmake --build "$cache/llama.cpp/build" --target llama-bench llama-batched-bench llama-simple -j"$(nproc)" >&2
fi
echo "$bin"
