#!/usr/bin/env bash
# build.sh [DIR] [extra cmake args...]: configures and builds deepinfer
# (Release by default) into DIR (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir"
