#!/usr/bin/env bash
# Sets up a fresh machine, builds deepinfer and runs the main job: a greedy
# generate on the stories260K model from ../shared/models (or, when that file
# is absent, on a small random-weight model made by `deepinfer synth`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh build

model=../shared/models/gguf/stories260K.gguf
if [ ! -f "$model" ]; then
  echo "run: $model not found; using a random-weight model from 'deepinfer synth' (its text is gibberish)" >&2
  model=build/synth-tiny.gguf
  [ -f "$model" ] || ./build/deepinfer synth --arch llama --preset tiny --dtype f32 --seed 1 --out "$model"
fi
./build/deepinfer generate --model "$model" --prompt "${PROMPT:-Once upon a time}" --max-tokens "${MAX_TOKENS:-64}" --temperature 0
echo
