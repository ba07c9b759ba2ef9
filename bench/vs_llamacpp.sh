#!/usr/bin/env bash
# deepinfer vs llama.cpp, side by side on one GGUF, rounds alternating between the two engines.
#
#   bench/vs_llamacpp.sh --arch llama --preset llama-110m --dtype q8_0 [--threads 2] [--rounds 3]
#   bench/vs_llamacpp.sh --model /tmp/bench/model.gguf
#
# Per round:
#   single:  deepinfer bench --prompt-tokens P --gen-tokens G --batch 1
#            llama-bench -p P -n 0   and   llama-bench -p 0 -n G -d P  (decode at the same depth P)
#   batched: deepinfer bench --prompt-tokens BP --gen-tokens BG --batch 4,16,64
#            llama-batched-bench -npp BP -ntg BG -npl 4,16,64  (aggregate generated tokens/s)
# Prints deepinfer/llama.cpp ratios (min / median / max over rounds) for prefill P, decode batch 1 and
# batched decode, the decode roofline (weight bytes read per token / read bandwidth) with the fraction
# each engine reaches, and `uptime` before and after. Not part of CI. Machines are noisy: look at the load.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
threads=2 rounds=3 prompt=512 gen=128 batches=4,16,64 batch_prompt=128 batch_gen=128
arch=llama preset=llama-110m dtype=q8_0 model="" bandwidth="" shared=0
deepinfer=${DEEPINFER:-$root/build/deepinfer}
out=""

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  cat <<'USAGE'
Options: --model PATH | --arch A --preset P --dtype D (synthesized into /tmp/bench/ once)
         --threads N (2) --rounds R (3) --prompt P (512) --gen G (128)
         --batches 4,16,64 --batch-prompt BP (128) --batch-gen BG (128) --shared-prompt
         --bandwidth GB/s (default: measured before and after the rounds, bench/read_bandwidth.cc and ../shared/bench/membw.cpp, the best)
         --deepinfer PATH (build/deepinfer or $DEEPINFER) --out DIR (raw results; default a temp dir)
llama.cpp binaries: $LLAMA_CPP_BIN, else /root/.cache/deepinfer-peer/llama.cpp/build/bin. On Intel AMX
machines, where that build's AMX path crashes: LLAMA_CPP_BIN=$(bench/peer-llamacpp-noamx.sh).
USAGE
}

while [ $# -gt 0 ]; do
  case $1 in
    --model) model=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    --gen) gen=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --batch-prompt) batch_prompt=$2; shift 2 ;;
    --batch-gen) batch_gen=$2; shift 2 ;;
    --shared-prompt) shared=1; shift ;;
    --bandwidth) bandwidth=$2; shift 2 ;;
    --deepinfer) deepinfer=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "vs_llamacpp: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for v in threads rounds prompt gen batch_prompt batch_gen; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "vs_llamacpp: --${v//_/-} must be a positive integer" >&2; exit 2; }
done
[[ $batches =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "vs_llamacpp: --batches must look like 4,16,64" >&2; exit 2; }

[ -x "$deepinfer" ] || { echo "vs_llamacpp: no deepinfer binary at $deepinfer (build it, or pass --deepinfer)" >&2; exit 1; }
llama_bin=${LLAMA_CPP_BIN:-/root/.cache/deepinfer-peer/llama.cpp/build/bin}
if [ ! -x "$llama_bin/llama-bench" ] || [ ! -x "$llama_bin/llama-batched-bench" ]; then
  echo "vs_llamacpp: llama.cpp's llama-bench / llama-batched-bench not found in $llama_bin;" >&2
  echo "  build them with ../shared/bench/peer-llamacpp.sh (prints the folder; or set LLAMA_CPP_BIN;" >&2
  echo "  on Intel AMX machines use bench/peer-llamacpp-noamx.sh)" >&2
  exit 1
fi

if [ -z "$model" ]; then
  mkdir -p /tmp/bench
  model=/tmp/bench/$arch-$preset-$dtype.gguf
  if [ ! -f "$model" ]; then
    echo "vs_llamacpp: synthesizing $model" >&2
    "$deepinfer" synth --arch "$arch" --preset "$preset" --dtype "$dtype" --seed 1 --out "$model" >&2
  fi
fi
[ -f "$model" ] || { echo "vs_llamacpp: model '$model' not found" >&2; exit 1; }
[ -n "$out" ] || { mkdir -p /tmp/bench && out=$(mktemp -d /tmp/bench/vs_llamacpp.XXXXXX); }
mkdir -p "$out"

# Read bandwidth at this thread count: the best of membw.cpp's plain read
# loop (../shared/bench) and bench/read_bandwidth.cc's tuned read kernels
# (the plain loop alone understates 2-thread bandwidth on Zen5 VMs; see that
# file), 1 GiB arrays, best of 3 passes; measured before and after the rounds,
# and the larger is the ceiling (a ceiling measured while a neighbour loads
# the machine would be too low).
measure_bandwidth() {
  mkdir -p /tmp/bench
  local readbw=/tmp/bench/read_bandwidth membw=/tmp/bench/membw tuned plain=""
  [ "$readbw" -nt "$here/read_bandwidth.cc" ] || g++ -O3 -march=native -pthread "$here/read_bandwidth.cc" -o "$readbw"
  tuned=$("$readbw" "$threads" 1 3 | awk '/^read GB\/s best/ { print $4 }')
  local membw_src=$root/../shared/bench/membw.cpp
  [ -f "$membw_src" ] || membw_src=/work/shared/bench/membw.cpp
  if [ -f "$membw_src" ]; then
    [ -x "$membw" ] || g++ -O3 -march=native -fopenmp "$membw_src" -o "$membw"
    plain=$(OMP_NUM_THREADS=$threads "$membw" 1 3 |
      awk '/^read/ { for (i = 1; i < NF; ++i) if ($i == "best") print $(i + 1) }')
  fi
  echo "read bandwidth at $threads threads: tuned ${tuned:-?} GB/s, plain ${plain:-?} GB/s" >&2
  printf '%s\n' "$tuned" "$plain" | grep -E '^[0-9.]+$' | sort -g | tail -1
}
bandwidth_given=$bandwidth
[ -n "$bandwidth" ] || bandwidth=$(measure_bandwidth)
[ -n "$bandwidth" ] || { echo "vs_llamacpp: could not measure bandwidth; pass --bandwidth GB/s" >&2; exit 1; }

max_batch=$(tr ',' '\n' <<<"$batches" | sort -n | tail -1)
ctx=$(( max_batch * (batch_prompt + batch_gen) + 256 ))
shared_flag=() pps_flag=()
if [ "$shared" = 1 ]; then shared_flag=(--shared-prompt); pps_flag=(-pps); fi

echo "model    $model"
echo "threads  $threads   rounds $rounds   single: P=$prompt G=$gen   batched: BP=$batch_prompt BG=$batch_gen npl=$batches$([ "$shared" = 1 ] && echo ' (shared prompt)')"
echo "before:  $(uptime)"

# The machine's bandwidth moves with its neighbours (33-77 GB/s within one hour on 2026-11-30), so
# without --bandwidth each single-sequence decode run is bracketed by two measurements, and its
# fraction of the roofline uses the larger of them.
bracket_bandwidth() {
  [ -n "$bandwidth_given" ] || measure_bandwidth 2>/dev/null >>"$1"
}
run_deepinfer() {
  local r=$1
  bracket_bandwidth "$out/di_bw_$r.txt"
  "$deepinfer" bench --model "$model" --threads "$threads" --prompt-tokens "$prompt" --gen-tokens "$gen" \
    --batch 1 --json "$out/di_single_$r.json" >"$out/di_single_$r.txt" 2>/dev/null
  bracket_bandwidth "$out/di_bw_$r.txt"
  "$deepinfer" bench --model "$model" --threads "$threads" --prompt-tokens "$batch_prompt" \
    --gen-tokens "$batch_gen" --batch "$batches" "${shared_flag[@]}" --json "$out/di_batched_$r.json" \
    >"$out/di_batched_$r.txt" 2>/dev/null
}
run_llama() {
  local r=$1
  "$llama_bin/llama-bench" -m "$model" -t "$threads" -p "$prompt" -n 0 -r 1 -o jsonl >"$out/ll_pp_$r.jsonl" 2>/dev/null
  bracket_bandwidth "$out/ll_bw_$r.txt"
  "$llama_bin/llama-bench" -m "$model" -t "$threads" -p 0 -n "$gen" -d "$prompt" -r 1 -o jsonl \
    >"$out/ll_tg_$r.jsonl" 2>/dev/null
  bracket_bandwidth "$out/ll_bw_$r.txt"
  "$llama_bin/llama-batched-bench" -m "$model" -t "$threads" -c "$ctx" -npp "$batch_prompt" -ntg "$batch_gen" \
    -npl "$batches" "${pps_flag[@]}" --output-format jsonl >"$out/ll_bb_$r.jsonl" 2>/dev/null
}

for r in $(seq 1 "$rounds"); do
  # Alternate who goes first, so a slow drift in machine load hits both.
  if [ $((r % 2)) = 1 ]; then
    echo "round $r/$rounds: deepinfer" >&2; run_deepinfer "$r"
    echo "round $r/$rounds: llama.cpp" >&2; run_llama "$r"
  else
    echo "round $r/$rounds: llama.cpp" >&2; run_llama "$r"
    echo "round $r/$rounds: deepinfer" >&2; run_deepinfer "$r"
  fi
done

if [ -z "$bandwidth_given" ]; then
  after=$(measure_bandwidth)
  bandwidth=$(printf '%s\n' "$bandwidth" "$after" | grep -E '^[0-9.]+$' | sort -g | tail -1)
fi

python3 - "$out" "$rounds" "$batches" "$bandwidth" <<'PY'
import json, statistics, sys
out, rounds, batches, bw = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(","), float(sys.argv[4])

def jsonl(path):
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")]

rows = {}  # metric -> list of (deepinfer, llama) per round
def add(name, di, ll):
    rows.setdefault(name, []).append((di, ll))

weight_bytes = None
for r in range(1, rounds + 1):
    s = json.load(open(f"{out}/di_single_{r}.json"))
    b = json.load(open(f"{out}/di_batched_{r}.json"))
    weight_bytes = s["weight_bytes_per_token"]
    pp = [x for x in jsonl(f"{out}/ll_pp_{r}.jsonl") if x.get("n_prompt", 0) > 0][0]["avg_ts"]
    tg = [x for x in jsonl(f"{out}/ll_tg_{r}.jsonl") if x.get("n_gen", 0) > 0][0]["avg_ts"]
    add(f"prefill {s['prompt_tokens']}", s["prefill_tokens_per_s"], pp)
    add("decode batch 1", s["decode_tokens_per_s"]["1"], tg)
    bb = {str(x["pl"]): x["speed_tg"] for x in jsonl(f"{out}/ll_bb_{r}.jsonl")}
    for k in batches:
        add(f"decode batch {k}", b["decode_tokens_per_s"][k], bb[k])

print(f"\n{'tok/s (median of %d)' % rounds:<24} {'deepinfer':>10} {'llama.cpp':>10}   ratio min / median / max")
for name, v in rows.items():
    ratios = [d / l for d, l in v]
    print(f"{name:<24} {statistics.median(d for d, _ in v):>10.1f} {statistics.median(l for _, l in v):>10.1f}"
          f"   {min(ratios):.2f} / {statistics.median(ratios):.2f} / {max(ratios):.2f}")
ceiling = bw * 1e9 / weight_bytes
d1 = statistics.median(d for d, _ in rows["decode batch 1"])
l1 = statistics.median(l for _, l in rows["decode batch 1"])
print(f"\ndecode roofline: {weight_bytes / 1e6:.1f} MB of weights per token at {bw:.1f} GB/s read = {ceiling:.1f} tok/s;"
      f" deepinfer reaches {100 * d1 / ceiling:.0f}%, llama.cpp {100 * l1 / ceiling:.0f}%")

def bracket(name, r):  # the larger bandwidth measured just before / after that run, or None
    try:
        vals = [float(x) for x in open(f"{out}/{name}_bw_{r}.txt").read().split()]
    except (OSError, ValueError):
        return None
    return max(vals) if vals else None

paired = {"deepinfer": [], "llama.cpp": []}
for r in range(1, rounds + 1):
    d, l = rows["decode batch 1"][r - 1]
    for engine, name, tps in (("deepinfer", "di", d), ("llama.cpp", "ll", l)):
        b = bracket(name, r)
        if b:
            paired[engine].append(100 * tps * weight_bytes / (b * 1e9))
if paired["deepinfer"] and paired["llama.cpp"]:
    fmt = lambda v: " / ".join(f"{x:.0f}" for x in (min(v), statistics.median(v), max(v)))
    print(f"roofline per round, against the bandwidth measured around that run (min / median / max %):"
          f" deepinfer {fmt(paired['deepinfer'])}, llama.cpp {fmt(paired['llama.cpp'])}")
PY
echo "after:   $(uptime)"
echo "raw results: $out"
