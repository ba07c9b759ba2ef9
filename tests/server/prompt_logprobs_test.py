#!/usr/bin/env python3
"""prompt_logprobs (vLLM's field, issue 18 item 4) over real HTTP against `deepinfer serve` on stories260K:

  score       /v1/completions `prompt_logprobs: k` equals `deepinfer score --tokens PROMPT --top k` for the
              same token ids bit for bit (score prints doubles with 17 digits; the server's float32 values
              must be exactly those doubles rounded to float32), ranks equal the rank among score's own
              top list, decoded_token is the token's text; the first entry is null.
  chunks      the server (--kv-cache-dtype f32, score's) runs with --max-num-batched-tokens 7 so the prompt is prefilled in chunks that
              split it anywhere (score runs it as one chunk).
  cache       a repeat of the request (its prefix cached by then) returns every entry, the same values, and
              usage.prompt_tokens_details.cached_tokens 0 (such requests recompute the cached prefix).
  chat        /v1/chat/completions puts prompt_logprobs beside the choices (one entry per rendered prompt
              token, compared with the completions route on the rendered prompt's ids from /tokenize).
  echo        completions echo + logprobs lead the logprobs with the prompt's tokens (the first null),
              equal to the prompt_logprobs values; streamed too.
  errors      prompt_logprobs above 20, negative, or with stream: 400 naming the field.

usage: prompt_logprobs_test.py DEEPINFER SHARED_DIR
"""
import http.client
import json
import os
import random
import subprocess
import sys

import numpy as np

from harness import ServeProcess, check, failures

DI, SHARED = sys.argv[1], sys.argv[2]
GGUF = os.path.join(SHARED, "models", "gguf", "stories260K.gguf")
K = 4


def post(server, path, body):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    payload = r.read()
    c.close()
    return r.status, payload


def post_json(server, path, body):
    status, payload = post(server, path, body)
    return status, json.loads(payload)


def score(tokens, top):
    out = subprocess.run([DI, "score", GGUF, "--tokens", ",".join(map(str, tokens)), "--top", str(top),
                          "--threads", "1"], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def f32(x):
    return float(np.float32(x))


def compare_with_score(plp, tokens, what):
    lines = score(tokens, K)
    check(len(plp) == len(tokens) and plp[0] is None, what + ": one entry per prompt token, the first null")
    exact = True
    for i, line in enumerate(lines):
        entry = plp[i + 1] or {}
        tok = str(tokens[i + 1])
        if tok not in entry or f32(line["logprob"]) != entry[tok]["logprob"]:
            exact = False
            print("  position %d: %r vs score %r" % (i, entry.get(tok), line["logprob"]))
            break
        top_ids = [t for t, _ in line["top"]]
        want_rank = top_ids.index(tokens[i + 1]) + 1 if tokens[i + 1] in top_ids else None
        if want_rank is not None and entry[tok]["rank"] != want_rank:
            exact = False
        if want_rank is None and entry[tok]["rank"] <= K:
            exact = False
        for j, (t, lp) in enumerate(line["top"]):
            e = entry.get(str(t))
            if e is None or e["logprob"] != f32(lp) or (t != tokens[i + 1] and e["rank"] != j + 1):
                exact = False
        if len(entry) != K + (0 if tokens[i + 1] in top_ids else 1):
            exact = False
        if not exact:
            print("  position %d differs: %r vs score %r" % (i, entry, line))
            break
    check(exact, what + ": logprobs, top %d and ranks equal `deepinfer score` bit for bit" % K)


def main():
    # score's KV is f32 (serve's auto may pick a narrower type, which changes the numbers).
    server = ServeProcess(DI, GGUF, ["--max-num-batched-tokens", "7", "--max-model-len", "128",
                                     "--kv-cache-dtype", "f32"])
    try:
        rng = random.Random(3)
        tokens = [1] + [rng.randrange(3, 512) for _ in range(40)]
        body = {"prompt": tokens, "max_tokens": 2, "temperature": 0, "prompt_logprobs": K}
        status, r = post_json(server, "/v1/completions", body)
        check(status == 200, "completions with prompt_logprobs: 200 (%d %s)" % (status, str(r)[:200]))
        plp = r["choices"][0]["prompt_logprobs"]
        compare_with_score(plp, tokens, "completions, chunks of 7")
        decoded_ok = all(e[str(t)]["decoded_token"] is not None for e, t in zip(plp[1:], tokens[1:]))
        check(decoded_ok, "every entry has its decoded_token")

        status, again = post_json(server, "/v1/completions", body)
        check(again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0,
              "repeat: no cached prompt tokens used (%r)" % again["usage"])
        check(again["choices"][0]["prompt_logprobs"] == plp, "repeat: every entry, equal values")
        status, plain = post_json(server, "/v1/completions", {"prompt": tokens, "max_tokens": 2, "temperature": 0})
        check(plain["usage"]["prompt_tokens_details"]["cached_tokens"] > 0 and
              "prompt_logprobs" not in plain["choices"][0],
              "a request without prompt_logprobs still uses the prefix cache and has no prompt_logprobs")

        # Chat: the rendered prompt's ids from /tokenize, scored by the completions route.
        messages = [{"role": "user", "content": "Once upon a time"}]
        status, chat = post_json(server, "/v1/chat/completions",
                                 {"messages": messages, "max_tokens": 2, "temperature": 0, "prompt_logprobs": 2})
        check(status == 200 and "prompt_logprobs" in chat and "prompt_logprobs" not in chat["choices"][0],
              "chat: prompt_logprobs beside the choices (%d)" % status)
        status, tok = post_json(server, "/tokenize", {"messages": messages})
        check(len(chat["prompt_logprobs"]) == len(tok["tokens"]) == chat["usage"]["prompt_tokens"],
              "chat: one entry per rendered prompt token")
        status, comp = post_json(server, "/v1/completions",
                                 {"prompt": tok["tokens"], "max_tokens": 1, "prompt_logprobs": 2})
        check(comp["choices"][0]["prompt_logprobs"] == chat["prompt_logprobs"],
              "chat: equal to completions on the rendered prompt's ids")

        # echo + logprobs: the prompt's tokens lead the logprobs.
        echo_body = {"prompt": tokens, "max_tokens": 3, "temperature": 0, "echo": True, "logprobs": 2}
        status, echo = post_json(server, "/v1/completions", echo_body)
        lp = echo["choices"][0]["logprobs"]
        n = len(tokens)
        check(status == 200 and len(lp["token_logprobs"]) == n + 3 and lp["token_logprobs"][0] is None and
              lp["top_logprobs"][0] is None, "echo + logprobs: prompt tokens (first null) then 3 generated")
        want = [plp[i + 1][str(tokens[i + 1])]["logprob"] for i in range(n - 1)]
        check(lp["token_logprobs"][1:n] == want, "echo + logprobs: the prompt's values equal prompt_logprobs")
        check(all(len(t) == 2 for t in lp["top_logprobs"][1:]), "echo + logprobs: top 2 per token")
        status, payload = post(server, "/v1/completions", dict(echo_body, stream=True))
        streamed = {"token_logprobs": [], "text": ""}
        for line in payload.decode().splitlines():
            if line.startswith("data: {"):
                ch = json.loads(line[6:])["choices"]
                if ch and ch[0]["logprobs"]:
                    streamed["token_logprobs"] += ch[0]["logprobs"]["token_logprobs"]
                if ch:
                    streamed["text"] += ch[0]["text"]
        check(streamed["token_logprobs"] == lp["token_logprobs"] and streamed["text"] == echo["choices"][0]["text"],
              "echo + logprobs streamed: the same logprobs and text")

        for bad in ({"prompt_logprobs": 21}, {"prompt_logprobs": -1}, {"prompt_logprobs": 1, "stream": True}):
            for path, base in (("/v1/completions", {"prompt": "hi"}), ("/v1/chat/completions", {"messages": messages})):
                status, r = post_json(server, path, dict(base, max_tokens=1, **bad))
                check(status == 400 and r["error"]["param"] == "prompt_logprobs",
                      "%s %r: 400 naming prompt_logprobs" % (path, bad))
    finally:
        server.stop()
    if failures:
        print("FAILED: %d check(s)" % len(failures))
        sys.exit(1)
    print("prompt_logprobs: all checks passed")


main()
