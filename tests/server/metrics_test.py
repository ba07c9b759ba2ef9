#!/usr/bin/env python3
"""/metrics of `deepinfer serve` (issue 18, item 8), over real HTTP on stories260K:

  promtool    `promtool check metrics` (Debian's prometheus package) accepts the exposition, before
              any request and after a mix of requests (plain, streamed, aborted by the client).
  histograms  after N sequential requests with known token counts (ignore_eos, so each generates
              exactly max_tokens): every per-request histogram counted each request once; buckets
              are cumulative (non-decreasing, +Inf == _count); the token-count histograms' sums are
              the usage totals the responses reported; TTFT counted one per request and time per
              output token one per later token; per request e2e >= queue + prefill + decode, so
              the sums are too; and the e2e sum is at most the client's own wall time of those
              requests (the server cannot take longer than the client waited).
  prefix      the same 48-token prompt twice: the second hits the prefix cache; the query and hit
              counters (tokens) grow by the prompt tokens and by the cached_tokens the responses
              reported, and the hit ratio gauge is hits / queries.

usage: metrics_test.py DEEPINFER SHARED_DIR
"""
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from harness import ServeProcess, check, failures

DI, SHARED = sys.argv[1], sys.argv[2]
GGUF = os.path.join(SHARED, "models", "gguf", "stories260K.gguf")
HISTOGRAMS = ["deepinfer_e2e_request_latency_seconds", "deepinfer_request_queue_time_seconds",
              "deepinfer_request_prefill_time_seconds", "deepinfer_request_decode_time_seconds",
              "deepinfer_request_inference_time_seconds", "deepinfer_time_to_first_token_seconds", "deepinfer_request_prompt_tokens",
              "deepinfer_request_generation_tokens"]


class Server(ServeProcess):
    def __init__(self, args):
        super().__init__(DI, GGUF, args)

    def post(self, path, body):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def metrics_text(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", "/metrics")
        r = c.getresponse()
        text = r.read().decode()
        c.close()
        return text



SAMPLE = re.compile(r'^([a-zA-Z0-9_:]+)(\{le="([^"]+)"\})? (\S+)$')


def parse(text):
    """{name: value} for plain samples; {name: [(le, cumulative count), ...]} under name + "_bucket"."""
    values, buckets = {}, {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if m is None:
            continue  # labelled series other than le (none on a dense model without speculation)
        name, le, value = m.group(1), m.group(3), float(m.group(4))
        if le is not None:
            buckets.setdefault(name, []).append((float(le), value))
        else:
            values[name] = value
    return values, buckets


def promtool(text, when):
    exe = shutil.which("promtool")
    if exe is None:
        if os.environ.get("CI"):
            check(False, "promtool is installed (scripts/install-deps.sh installs Debian's prometheus)")
        else:
            print("SKIP  promtool check metrics (%s): promtool not found; "
                  "scripts/install-deps.sh installs Debian's prometheus package" % when)
        return
    r = subprocess.run([exe, "check", "metrics"], input=text, capture_output=True, text=True)
    check(r.returncode == 0, "promtool check metrics (%s): %s" % (when, (r.stdout + r.stderr).strip() or "clean"))


def complete(server, body):
    t = time.monotonic()
    status, data = server.post("/v1/completions", body)
    wall = time.monotonic() - t
    if status != 200:
        raise SystemExit("FAIL: completion %d %s" % (status, data[:300]))
    return json.loads(data)["usage"], wall


server = Server([])
try:
    promtool(server.metrics_text(), "a fresh server")
    v0, b0 = parse(server.metrics_text())
    check(all(v0[h + "_count"] == 0 for h in HISTOGRAMS), "a fresh server: every histogram is empty")

    # ---- N sequential requests with known token counts
    prompts = ["Once upon a time", "The little dog ran to the", "Lily wanted to play with her", "One day, a big"]
    max_tokens = [5, 8, 1, 12]
    usages, wall = [], 0.0
    for p, k in zip(prompts, max_tokens):
        u, w = complete(server, {"prompt": p, "max_tokens": k, "temperature": 0, "ignore_eos": True})
        usages.append(u)
        wall += w
    n = len(prompts)
    v, b = parse(server.metrics_text())
    check([u["completion_tokens"] for u in usages] == max_tokens, "ignore_eos: each request generated max_tokens")
    for h in HISTOGRAMS:
        check(v[h + "_count"] == n, "%s_count == %d requests (%g)" % (h, n, v[h + "_count"]))
        series = b[h + "_bucket"]
        counts = [c for _, c in series]
        bounds = [le for le, _ in series]
        check(bounds == sorted(bounds) and bounds[-1] == float("inf"), "%s: ascending le, ending in +Inf" % h)
        check(all(x <= y for x, y in zip(counts, counts[1:])) and counts[-1] == v[h + "_count"],
              "%s: cumulative buckets, +Inf == _count" % h)
    check(v["deepinfer_request_prompt_tokens_sum"] == sum(u["prompt_tokens"] for u in usages),
          "request_prompt_tokens_sum == the responses' prompt_tokens (%g)" % v["deepinfer_request_prompt_tokens_sum"])
    check(v["deepinfer_request_generation_tokens_sum"] == sum(max_tokens),
          "request_generation_tokens_sum == %d generated" % sum(max_tokens))
    # 1 generated token: le="1" holds exactly that request; le="5": the 1- and 5-token ones.
    gen = dict(b["deepinfer_request_generation_tokens_bucket"])
    check(gen[1.0] == 1 and gen[2.0] == 1 and gen[5.0] == 2 and gen[10.0] == 3 and gen[20.0] == 4,
          "request_generation_tokens buckets place 1, 5, 8, 12 tokens (%s)" % {k: gen[k] for k in (1, 2, 5, 10, 20)})
    check(v["deepinfer_time_per_output_token_seconds_count"] == sum(k - 1 for k in max_tokens),
          "time_per_output_token counts every token after the first (%g)"
          % v["deepinfer_time_per_output_token_seconds_count"])
    for h in ["deepinfer_e2e_request_latency_seconds", "deepinfer_request_prefill_time_seconds",
              "deepinfer_request_decode_time_seconds"]:
        check(v[h + "_sum"] > 0, "%s_sum > 0 (%g s)" % (h, v[h + "_sum"]))
    check(v["deepinfer_request_queue_time_seconds_sum"] >= 0, "queue time sum >= 0")
    parts = sum(v["deepinfer_request_%s_time_seconds_sum" % p] for p in ("queue", "prefill", "decode"))
    check(v["deepinfer_e2e_request_latency_seconds_sum"] >= parts * (1 - 1e-9),
          "e2e sum (%g) >= queue + prefill + decode sums (%g)" % (v["deepinfer_e2e_request_latency_seconds_sum"], parts))
    inference = v["deepinfer_request_inference_time_seconds_sum"]
    check(abs(inference - v["deepinfer_request_prefill_time_seconds_sum"]
              - v["deepinfer_request_decode_time_seconds_sum"]) <= 1e-6 * max(inference, 1e-3),
          "inference time sum == prefill + decode sums (%g)" % inference)
    check(v["deepinfer_e2e_request_latency_seconds_sum"] <= wall,
          "e2e sum (%g s) <= the client's wall time of the requests (%g s)"
          % (v["deepinfer_e2e_request_latency_seconds_sum"], wall))

    # ---- prefix cache: the same 48-token prompt twice (three 16-token blocks)
    prompt = [1] + [3 + (i * 37) % 500 for i in range(47)]
    before, _ = parse(server.metrics_text())
    u1, _ = complete(server, {"prompt": prompt, "max_tokens": 2, "temperature": 0})
    u2, _ = complete(server, {"prompt": prompt, "max_tokens": 2, "temperature": 0})
    after, _ = parse(server.metrics_text())
    hits = [u["prompt_tokens_details"]["cached_tokens"] for u in (u1, u2)]
    # (the first may reuse the BOS the earlier prompts left cached)
    check(hits[0] < 16 and hits[1] >= 32, "the repeated prompt is served from the prefix cache (cached %s)" % hits)
    dq = after["deepinfer_prefix_cache_queries_total"] - before["deepinfer_prefix_cache_queries_total"]
    dh = after["deepinfer_prefix_cache_hits_total"] - before["deepinfer_prefix_cache_hits_total"]
    check(dq == 96, "prefix_cache_queries_total grew by the 2 x 48 prompt tokens (%g)" % dq)
    check(dh == sum(hits) and dh > 0, "prefix_cache_hits_total grew by the reported cached tokens (%g vs %d)"
          % (dh, sum(hits)))
    ratio = after["deepinfer_prefix_cache_hits_total"] / after["deepinfer_prefix_cache_queries_total"]
    check(abs(after["deepinfer_prefix_cache_hit_ratio"] - ratio) < 1e-12, "prefix_cache_hit_ratio == hits / queries")

    # ---- a streamed request cut by the client, then promtool on everything
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    payload = json.dumps({"prompt": "Once upon a time", "max_tokens": 60, "stream": True}).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload))
    sock.recv(256)
    sock.close()
    deadline = time.time() + 10
    while time.time() < deadline:
        v, _ = parse(server.metrics_text())
        if v["deepinfer_num_requests_running"] == 0 and v["deepinfer_e2e_request_latency_seconds_count"] == n + 3:
            break
        time.sleep(0.05)
    check(v["deepinfer_e2e_request_latency_seconds_count"] == n + 3,
          "the aborted stream is counted in e2e once it ends (%g)" % v["deepinfer_e2e_request_latency_seconds_count"])
    promtool(server.metrics_text(), "after plain, streamed and aborted requests")
finally:
    server.stop()

print("\nmetrics_test: %d failed" % len(failures))
sys.exit(1 if failures else 0)
