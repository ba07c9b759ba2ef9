#!/usr/bin/env python3
"""Per-depth conditional MTP acceptance through `deepinfer serve`'s /metrics.

The protocol of shared/models/stories260K-mtp/README.md, run through the engine
(docs/speculative.md, "Measured: per-depth acceptance"):
- prompts: BOS + the first 16 or 64 tokens (alternating) of stories the base
  model samples from BOS (T = 1.0, every fifth at 0.8; seeds SEED, SEED+1, ...;
  a story with a BOS inside its prefix is skipped);
- each prompt continued greedily for --gen-tokens, stopping at BOS, one request
  at a time, --spec-schedule fixed with K drafts;
- depth d's conditional acceptance = accepted at position d / accepted at
  position d-1 (position -1: the verifications), counted over the greedy
  phase only (the /metrics counters before and after it).

Usage:
  scripts/mtp_acceptance.py --binary build/deepinfer --model /work/shared/models/stories260K-mtp \
      --tokenizer /work/shared/models/gguf/stories260K.gguf --prompts 12 --seed 500
"""
import argparse
import json
import re
import subprocess
import time
import urllib.request

README_TABLE = [0.774, 0.755, 0.749, 0.744, 0.738]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/deepinfer")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokenizer", default=None)
    ap.add_argument("--prompts", type=int, default=12)
    ap.add_argument("--seed", type=int, default=500)
    ap.add_argument("--gen-tokens", type=int, default=200)
    ap.add_argument("--num-speculative-tokens", type=int, default=5)
    ap.add_argument("--kv-cache-dtype", default="f32", help="f32: the README's numbers are float32")
    ap.add_argument("--port", type=int, default=18431)
    a = ap.parse_args()

    url = f"http://127.0.0.1:{a.port}"
    cmd = [a.binary, "serve", a.model, "--port", str(a.port), "--threads", "1", "--speculative-method", "mtp",
           "--spec-schedule", "fixed", "--num-speculative-tokens", str(a.num_speculative_tokens),
           "--kv-cache-dtype", a.kv_cache_dtype]
    if a.tokenizer:
        cmd += ["--tokenizer", a.tokenizer]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def post(path, body):
        req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return json.load(r)

    def metrics():
        with urllib.request.urlopen(url + "/metrics") as r:
            text = r.read().decode()
        drafts = float(re.search(r"^deepinfer_spec_decode_num_drafts_total (\S+)", text, re.M).group(1))
        per_pos = [float(x) for x in re.findall(
            r'^deepinfer_spec_decode_num_accepted_tokens_per_pos_total\{position="\d+"\} (\S+)', text, re.M)]
        gauge = lambda name: [float(x) for x in re.findall(  # noqa: E731
            r'^deepinfer_spec_decode_' + name + r'_acceptance\{position="\d+"\} (\S+)', text, re.M)]
        return drafts, per_pos, gauge("predicted"), gauge("observed")

    try:
        for _ in range(300):
            if server.poll() is not None:
                raise SystemExit("mtp_acceptance: the server exited (run its command by hand to see why)")
            try:
                urllib.request.urlopen(url + "/v1/models").close()
                break
            except OSError:
                time.sleep(0.2)
        prompts, seed = [], a.seed
        while len(prompts) < a.prompts:
            i = len(prompts)
            length = 16 if i % 2 == 0 else 64
            story = post("/v1/completions", {"model": a.model, "prompt": [1], "max_tokens": 80,
                                             "temperature": 0.8 if i % 5 == 4 else 1.0, "seed": seed,
                                             "ignore_eos": True})["choices"][0]["text"]
            seed += 1
            ids = post("/tokenize", {"model": a.model, "prompt": story, "add_special_tokens": True})["tokens"]
            if len(ids) >= 1 + length and 1 not in ids[1:1 + length]:
                prompts.append(ids[:1 + length])
        drafts0, pos0, _, _ = metrics()
        generated = 0
        for p in prompts:
            r = post("/v1/completions", {"model": a.model, "prompt": p, "max_tokens": a.gen_tokens,
                                         "temperature": 0, "stop_token_ids": [1]})
            generated += r["usage"]["completion_tokens"]
        drafts1, pos1, predicted, observed = metrics()
        trials = drafts1 - drafts0
        print(f"{len(prompts)} prompts (seeds from {a.seed}), {generated} greedy tokens, {trials:.0f} verifications")
        print("depth  conditional acceptance (accepted / trials)  README  diff   [all-run gauges: predicted observed]")
        for d in range(min(len(pos1), a.num_speculative_tokens)):
            accepted = pos1[d] - pos0[d]
            rate = accepted / trials if trials else 0.0
            ref = README_TABLE[d] if d < len(README_TABLE) else float("nan")
            gauges = f"{predicted[d]:.3f} {observed[d]:.3f}" if d < len(predicted) and d < len(observed) else ""
            print(f"{d + 1:5d}  {rate:.3f} ({accepted:.0f} / {trials:.0f})  {ref:.3f}  {rate - ref:+.3f}   [{gauges}]")
            trials = accepted
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
