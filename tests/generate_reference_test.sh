#!/usr/bin/env bash
# generate_reference_test.sh DEEPINFER SHARED_DIR
# `deepinfer generate` (greedy) must print exactly the llama.cpp reference
# continuations recorded in SHARED_DIR/models/README.md ("Reference outputs").
# The expected strings are the README's texts with the prompt removed.
set -uo pipefail
bin=$1
models=$2/models
failed=0

check() {  # check NAME MODEL MAX_TOKENS EXPECTED
  local name=$1 model=$2 n=$3 expected=$4 got
  got=$("$bin" generate --model "$model" --prompt "Once upon a time" --max-tokens "$n" --temperature 0)
  local rc=$?
  if [ $rc -ne 0 ] || [ "$got" != "$expected" ]; then
    echo "FAIL $name (rc=$rc)"
    echo "  expected: $(printf '%q' "$expected")"
    echo "  got:      $(printf '%q' "$got")"
    failed=1
  else
    echo "ok   $name"
  fi
}

check stories260K "$models/gguf/stories260K.gguf" 64 ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily's mom said"

check aidreams260K "$models/gguf/aidreams260K.gguf" 64 ", pixels unfolding like petals. Classifications unfold, a kaleidoscope of probability revealing hidden patterns. Classification whispers sec"

# Random F16 weights: the README warns another implementation may drift after
# a few tokens; llama.cpp's 32 tokens are reproduced here in full.
check llama-2-tiny-random "$models/gguf/llama-2-tiny-random.gguf" 32 "ernalrightarrow попуdevelopment Gar(), successo status heutigenโ zesificate successo status heutigenโgele HarttekupsologЕfahrtникиizaçãountaException inwonersleb Ele Werk zes"

# Sampling with a seed is reproducible run to run, and differs across seeds.
a=$("$bin" generate --model "$models/gguf/stories260K.gguf" --prompt "Once upon a time" --max-tokens 48 --temperature 1.0 --seed 7)
b=$("$bin" generate --model "$models/gguf/stories260K.gguf" --prompt "Once upon a time" --max-tokens 48 --temperature 1.0 --seed 7)
c=$("$bin" generate --model "$models/gguf/stories260K.gguf" --prompt "Once upon a time" --max-tokens 48 --temperature 1.0 --seed 8)
if [ "$a" != "$b" ] || [ "$a" == "$c" ] || [ -z "$a" ]; then
  echo "FAIL seeded sampling: same seed gave different text, or different seeds the same"
  failed=1
else
  echo "ok   seeded sampling"
fi
exit $failed
