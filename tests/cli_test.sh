#!/usr/bin/env bash
# CLI error contract (docs/DESIGN.md section 3): for any user error -- a bad flag, an unreadable or
# damaged model, an out-of-range token id -- `deepinfer` exits non-zero with exactly ONE clear line
# on stderr, prints nothing on stdout, and never crashes (no signal, no abort, no sanitizer report, no
# stack trace) or hangs.
#
# Usage: tests/cli_test.sh path/to/deepinfer path/to/shared
# Damaged files are made fresh in a temp dir by tests/cli_make_corrupt.py (stdlib Python only).
# Positive controls (a valid model loads and scores) keep the error cases from passing vacuously.
set -u

DI=${1:?usage: cli_test.sh DEEPINFER SHARED_DIR}
SHARED=${2:?usage: cli_test.sh DEEPINFER SHARED_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
GGUF="$SHARED/models/gguf/stories260K.gguf"   # vocab 512, context 128
HF_STORIES="$SHARED/models/stories260K-mtp"   # config.json + model.safetensors (no tokenizer.json)
TIMEOUT=${CLI_TEST_TIMEOUT:-30}

for f in "$DI" "$GGUF" "$HF_STORIES/config.json"; do
  [ -e "$f" ] || { echo "cli_test: FAIL: missing $f"; exit 1; }
done

TMP=$(mktemp -d /tmp/di_cli_test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
failed_names=()

# expect_error NAME ARGS... : non-zero exit (not a signal, not a timeout), exactly one non-empty line on
# stderr, empty stdout, no crash markers.
expect_error() {
  local name=$1; shift
  local out="$TMP/out" err="$TMP/err" rc
  timeout "$TIMEOUT" "$DI" "$@" >"$out" 2>"$err" </dev/null
  rc=$?
  local why="" errtext lines=() l nonempty=0
  errtext=$(<"$err")
  mapfile -t lines <"$err"          # a last line without a trailing newline still counts
  for l in "${lines[@]}"; do [ -n "$l" ] && nonempty=$((nonempty + 1)); done
  local crash_re='AddressSanitizer|LeakSanitizer|runtime error:|terminate called|Segmentation fault|Aborted|core dumped|(^|'$'\n'')[[:space:]]*#[0-9]+[[:space:]]+0x'
  if [ "$rc" -eq 0 ]; then why="exit 0 (expected an error)"
  elif [ "$rc" -eq 124 ]; then why="timed out after ${TIMEOUT}s"
  elif [ "$rc" -ge 128 ]; then why="killed by signal $((rc - 128))"
  elif [[ $errtext =~ $crash_re ]]; then why="crash/stack trace on stderr"
  elif [ "$nonempty" -ne 1 ] || [ "${#lines[@]}" -ne 1 ]; then why="stderr has ${#lines[@]} lines (want exactly 1)"
  elif [ -s "$out" ]; then why="printed on stdout: $(head -c 100 "$out")"
  fi
  if [ -z "$why" ]; then
    pass=$((pass + 1))
    printf 'ok    %-34s rc=%d  %s\n' "$name" "$rc" "${errtext:0:150}"
  else
    fail=$((fail + 1)); failed_names+=("$name")
    printf 'FAIL  %-34s %s\n' "$name" "$why"
    printf '      cmd: deepinfer %s\n' "$(echo "$*" | cut -c1-160)"
    sed -n '1,6p' "$err" | sed 's/^/      stderr: /'
  fi
}

# expect_ok NAME MIN_STDOUT_LINES ARGS... : positive control.
expect_ok() {
  local name=$1 min=$2; shift 2
  local out="$TMP/out" err="$TMP/err" rc
  timeout "$TIMEOUT" "$DI" "$@" >"$out" 2>"$err" </dev/null
  rc=$?
  local lines; lines=$(grep -c . "$out")
  if [ "$rc" -eq 0 ] && [ "$lines" -ge "$min" ]; then
    pass=$((pass + 1)); printf 'ok    %-34s rc=0  (%d stdout lines)\n' "$name" "$lines"
  else
    fail=$((fail + 1)); failed_names+=("$name")
    printf 'FAIL  %-34s positive control: rc=%d, %d stdout lines (want rc 0, >= %d)\n' "$name" "$rc" "$lines" "$min"
    sed -n '1,4p' "$err" | sed 's/^/      stderr: /'
  fi
}

echo "== positive controls"
expect_ok  control_info_gguf        1 info --model "$GGUF"
expect_ok  control_score_gguf       2 score --model "$GGUF" --tokens 1,403,407 --top 3
HF_SRC="$TMP/hf_src"
if timeout "$TIMEOUT" "$DI" synth --arch llama --preset tiny --dtype f32 --seed 7 --format hf --out "$HF_SRC" \
     >/dev/null 2>"$TMP/synth_err"; then
  pass=$((pass + 1)); echo "ok    control_synth_hf                   rc=0"
  expect_ok control_score_hf        1 score --model "$HF_SRC" --tokens 1,2 --top 1
else
  fail=$((fail + 1)); failed_names+=("control_synth_hf")
  echo "FAIL  control_synth_hf                   synth --format hf failed: $(head -c 200 "$TMP/synth_err")"
  echo "      (HF damage cases below fall back to a copy of stories260K-mtp, which has no tokenizer.json)"
  HF_SRC="$HF_STORIES"
fi

echo "== bad flags"
expect_error unknown_command           frobnicate --model "$GGUF"
expect_error score_unknown_flag        score --model "$GGUF" --tokens 1,2 --bogus 1
expect_error score_missing_tokens      score --model "$GGUF"
expect_error score_missing_model       score --tokens 1,2
expect_error score_flag_without_value  score --model "$GGUF" --tokens 1,2 --top
expect_error score_top_not_a_number    score --model "$GGUF" --tokens 1,2 --top abc
expect_error score_top_negative        score --model "$GGUF" --tokens 1,2 --top -3
expect_error generate_bad_temperature  generate --model "$GGUF" --prompt hi --temperature warm
expect_error generate_no_prompt        generate --model "$GGUF"
expect_error generate_unknown_kv_dtype generate --model "$GGUF" --prompt hi --kv-cache-dtype unknown
expect_error serve_unknown_kv_dtype    serve --model "$GGUF" --kv-cache-dtype unknown
expect_error score_unknown_kv_dtype    score --model "$GGUF" --tokens 1,2 --kv-cache-dtype unknown
expect_error bench_unknown_kv_dtype    bench --model "$GGUF" --kv-cache-dtype unknown
# stories260K's KV head rows are 8 wide: q8_0 (blocks of 32) cannot hold them.
expect_error generate_q8_0_kv_narrow_heads generate --model "$GGUF" --prompt hi --kv-cache-dtype q8_0
expect_error info_unknown_flag         info --model "$GGUF" --verbose-please
expect_error tokenizer_missing_path    generate --model "$HF_STORIES" --tokenizer "$TMP/no/such/tokenizer.json" --prompt hi
expect_error tokenizer_vocab_too_big   generate --model "$GGUF" --tokenizer "$SHARED/models/tokenizers/qwen3" --prompt hi
expect_ok    tokenizer_from_gguf       1 generate --model "$HF_STORIES" --tokenizer "$GGUF" --prompt "Once upon a time" --max-tokens 8 --temperature 0
expect_error backend_bad_isa           generate --model "$GGUF" --prompt hi --isa sse9
expect_error backend_isa_no_value      info --model "$GGUF" --isa
expect_ok    backend_flags_accepted    3 info --model "$GGUF" --isa scalar --no-amx --no-huge-pages
expect_error spec_unknown_method       generate --model "$GGUF" --prompt hi --speculative-method magic
expect_error spec_mtp_without_layers   generate --model "$GGUF" --prompt hi --speculative-method mtp
expect_error spec_draft_without_model  generate --model "$GGUF" --prompt hi --speculative-method draft
expect_error spec_draft_missing_file   generate --model "$GGUF" --prompt hi --speculative-method draft --draft-model "$TMP/none.gguf"
expect_error spec_draft_other_vocab    generate --model "$GGUF" --prompt hi --speculative-method draft --draft-model "$SHARED/models/gguf/aidreams260K.gguf"
expect_error spec_sampling_needs_draft generate --model "$GGUF" --prompt hi --speculative-method ngram --spec-sampling rejection
expect_ok    spec_draft_generates      1 generate --model "$GGUF" --prompt "Once upon a time" --max-tokens 16 --temperature 0.8 --seed 3 --speculative-method draft --draft-model "$HF_STORIES" --spec-sampling rejection
expect_ok    spec_mtp_generates        1 generate --model "$HF_STORIES" --tokenizer "$GGUF" --prompt "Once upon a time" --max-tokens 16 --temperature 0 --speculative-method mtp
expect_error spec_mtp_weights_bad      generate --model "$HF_STORIES" --tokenizer "$GGUF" --prompt hi --speculative-method mtp --mtp-weights fp8
expect_error spec_mtp_weights_needs_mtp generate --model "$GGUF" --prompt hi --speculative-method ngram --mtp-weights stored
# The MTP drafter's int8 and stored matrices change drafts, never the output.
mtp_out() {
  timeout "$TIMEOUT" "$DI" generate --model "$HF_STORIES" --tokenizer "$GGUF" --prompt "Once upon a time" \
    --max-tokens 48 --temperature 0 "$@" 2>/dev/null </dev/null
}
plain=$(mtp_out) int8=$(mtp_out --speculative-method mtp) stored=$(mtp_out --speculative-method mtp --mtp-weights stored)
if [ -n "$plain" ] && [ "$plain" = "$int8" ] && [ "$plain" = "$stored" ]; then
  pass=$((pass + 1)); printf 'ok    %-34s same text\n' spec_mtp_weights_same_output
else
  fail=$((fail + 1)); failed_names+=(spec_mtp_weights_same_output)
  printf 'FAIL  %-34s outputs differ or are empty\n' spec_mtp_weights_same_output
fi
expect_error spec_k_out_of_range       generate --model "$GGUF" --prompt hi --speculative-method ngram --num-speculative-tokens 99
expect_error spec_k_without_method     generate --model "$GGUF" --prompt hi --num-speculative-tokens 3
expect_error spec_bad_schedule         generate --model "$GGUF" --prompt hi --speculative-method ngram --spec-schedule greedy
expect_error synth_unknown_arch        synth --arch nosucharch --preset tiny --dtype f32 --seed 1 --format hf --out "$TMP/x"
expect_error synth_unknown_preset      synth --arch llama --preset galactic --dtype f32 --seed 1 --format hf --out "$TMP/y"
expect_error synth_bad_format          synth --arch llama --preset tiny --dtype f32 --seed 1 --format zip --out "$TMP/z"

echo "== missing / unreadable model"
mkdir -p "$TMP/empty_dir"; : >"$TMP/empty.gguf"; echo "hello" >"$TMP/text.gguf"
expect_error info_nonexistent          info --model "$TMP/does/not/exist.gguf"
expect_error score_nonexistent         score --model "$TMP/does/not/exist" --tokens 1,2
expect_error generate_nonexistent      generate --model "$TMP/nope.gguf" --prompt hi
expect_error score_empty_dir           score --model "$TMP/empty_dir" --tokens 1,2
expect_error score_empty_file          score --model "$TMP/empty.gguf" --tokens 1,2
expect_error score_text_file           score --model "$TMP/text.gguf" --tokens 1,2
expect_error score_model_is_devnull    score --model /dev/null --tokens 1,2

echo "== damaged GGUF and HF copies"
if ! /usr/bin/python3 "$HERE/cli_make_corrupt.py" "$GGUF" "$HF_SRC" "$TMP/bad" >"$TMP/cases" 2>"$TMP/mk_err"; then
  echo "cli_test: FAIL: cli_make_corrupt.py failed: $(cat "$TMP/mk_err")"; exit 1
fi
while read -r kind name path; do
  if [ "$name" = intact ]; then
    expect_ok    "gguf_intact_copy"     1 info --model "$path"
    continue
  fi
  expect_error "${kind}_${name}_info"  info --model "$path"
  expect_error "${kind}_${name}_score" score --model "$path" --tokens 1,2
done <"$TMP/cases"

echo "== token ids (stories260K vocab is 512)"
expect_error tokens_id_eq_vocab        score --model "$GGUF" --tokens 1,512
expect_error tokens_id_negative        score --model "$GGUF" --tokens 1,-1
expect_error tokens_id_overflow        score --model "$GGUF" --tokens 1,99999999999999999999999
expect_error tokens_not_a_number       score --model "$GGUF" --tokens 1,abc
expect_error tokens_empty              score --model "$GGUF" --tokens ""
expect_error tokens_only_commas        score --model "$GGUF" --tokens ,,
expect_error tokens_id_huge_first      score --model "$GGUF" --tokens 4000000000,1

# Issue 19 (13): flags whose values were accepted and silently meant something else.
expect_error prompt_file_is_dir        generate --model "$GGUF" --prompt-file "$TMP/empty_dir"
expect_error serve_chat_template_empty serve --model "$GGUF" --port 0 --chat-template /dev/null
expect_error serve_max_model_len_neg   serve --model "$GGUF" --port 0 --max-model-len -1
expect_error serve_max_model_len_huge  serve --model "$GGUF" --port 0 --max-model-len 100000000
expect_error serve_kv_memory_overflow  serve --model "$GGUF" --port 0 --kv-cache-memory 999999999999999G

# Issue 19 (1): absurd counts in a config.json are one clear line, not bad_alloc (exit 134).
for layers in -1 1000000000 4294967295; do
  mkdir -p "$TMP/layers_$layers"
  cp "$HF_STORIES/model.safetensors" "$TMP/layers_$layers/"
  sed "s/\"num_hidden_layers\": 5/\"num_hidden_layers\": $layers/" "$HF_STORIES/config.json" \
    >"$TMP/layers_$layers/config.json"
  expect_error "hf_num_hidden_layers_$layers" info --model "$TMP/layers_$layers"
done

# Issue 19 (2): a thread that cannot be created (--threads 1024 under a memory limit) is one
# clear line and exit 1, not std::system_error's abort.
# (Not under the sanitizers, whose shadow memory alone exceeds any such limit.)
if [ -z "${DEEPINFER_SANITIZED:-}" ]; then
  printf '#!/usr/bin/env bash\nulimit -v 1500000\nexec "%s" "$@"\n' "$DI" >"$TMP/limited.sh"
  chmod +x "$TMP/limited.sh"
  DI_UNLIMITED=$DI
  DI=$TMP/limited.sh
  expect_error threads_under_ulimit      generate --model "$GGUF" --prompt hi --max-tokens 2 --threads 1024
  DI=$DI_UNLIMITED
else
  echo "skip  threads_under_ulimit               (sanitizer build)"
fi

echo
echo "cli_test: $pass passed, $fail failed"
if [ "$fail" -ne 0 ]; then
  printf 'cli_test: failed: %s\n' "${failed_names[*]}"
  exit 1
fi
exit 0
