#!/usr/bin/env python3
"""Bounded soak / abuse test of `deepinfer serve` (issue 19), loopback only, stdlib only.

One server on stories260K. For SOAK_SECONDS (default 20) a mix of clients runs at once:
streaming and non-streaming completions, chat, structured output (guided_choice / guided_regex /
guided_json), clients that drop a stream mid-way, clients that send a partial header or a short
body and stall, oversized bodies, unauthenticated 15 MiB bodies held open, and pipelined bytes
followed by a close. Meanwhile /health is probed. Afterwards the test asserts:
  - no response with a 5xx status to any client request (a client error is 4xx);
  - /metrics: running = 0, waiting = 0, KV blocks in use = 0;
  - the server's RSS grew by less than RSS_BOUND_MB (default 100) from its warm state, and 30 held-open
    unauthenticated 15 MiB bodies added less than 50 MB;
  - /health answered within HEALTH_BOUND_MS (default 250 ms; 100 ms is the target on an idle machine)
    at its worst;
  - SIGTERM exits 0.
Usage: soak_test.py --deepinfer build/deepinfer --shared ../shared
"""
import argparse
import json
import os
import random
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_e2e_test import API_KEY, Server, fail, stream_completion  # noqa: E402

SOAK_SECONDS = float(os.environ.get("SOAK_SECONDS", "20"))
RSS_BOUND_MB = float(os.environ.get("RSS_BOUND_MB", "100"))
HEALTH_BOUND_MS = float(os.environ.get("HEALTH_BOUND_MS", "250"))


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def raw(port, data, read=True, timeout=10):
    """Sends bytes on a fresh connection; returns the status code read back (0: none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return 0
        try:
            head = s.recv(64)
        except OSError:
            return 0
        return int(head[9:12]) if head.startswith(b"HTTP/1.1 ") else 0


def stall(port, data, held, max_held=20, hold_s=3.0):
    """A slow client: sends `data` (an incomplete request) and keeps the connection open for hold_s
    (past the server's header/body timeouts); at most max_held per worker at once."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    held.append((time.time(), s))
    while held and (len(held) > max_held or time.time() - held[0][0] > hold_s):
        held.pop(0)[1].close()


def post_bytes(path, body, auth=True):
    head = "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" % path
    if auth:
        head += "Authorization: Bearer %s\r\n" % API_KEY
    return (head + "Content-Length: %d\r\n\r\n" % len(body)).encode() + body


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.server_errors = []
        self.health_worst_ms = 0.0

    def record(self, kind, status, detail=""):
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if status >= 500:
                self.server_errors.append("%s -> %d %s" % (kind, status, detail[:200]))


def worker(server, stats, stop, seed):
    rng = random.Random(seed)
    port = server.port
    held = []  # stalled connections (slow clients)
    while not stop.is_set():
        kind = rng.choice(["stream", "full", "chat", "structured", "cancel", "slow_header", "slow_body",
                           "oversized", "pipelined_close", "bad_json"])
        try:
            if kind == "stream":
                stream_completion(port, {"prompt": "Once upon a time", "max_tokens": rng.randint(1, 40),
                                         "temperature": 0.8, "seed": rng.randint(0, 9)})
                stats.record(kind, 200)
            elif kind == "cancel":
                stream_completion(port, {"prompt": "Once", "max_tokens": 100, "ignore_eos": True},
                                  cancel_after=rng.randint(1, 5))
                stats.record(kind, 200)
            elif kind == "full":
                status, body = server.post("/v1/completions", {"prompt": "The cat", "max_tokens": 8,
                                                               "n": rng.randint(1, 3)})
                stats.record(kind, status, str(body))
            elif kind == "chat":
                status, body = server.post("/v1/chat/completions",
                                           {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8})
                stats.record(kind, status, str(body))
            elif kind == "structured":
                guided = rng.choice([{"guided_choice": ["yes", "no"]}, {"guided_regex": "[a-z]{1,6}"},
                                     {"guided_json": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                      "required": ["a"]}},
                                     {"guided_regex": "(?=a)b"}])  # unsupported: a 400
                body = {"prompt": "x", "max_tokens": 12, "ignore_eos": rng.random() < 0.5, **guided}
                status, resp = server.post("/v1/completions", body)
                stats.record(kind, status, str(resp))
            elif kind == "slow_header":
                stall(port, b"POST /v1/completions HTTP/1.1\r\nContent-Le", held)
                stats.record(kind, 0)
            elif kind == "slow_body":
                stall(port, post_bytes("/v1/completions", b'{"prompt": "abcdefgh"}')[:-6], held)
                stats.record(kind, 0)
            elif kind == "oversized":
                status = raw(port, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                             API_KEY.encode() + b"\r\nContent-Length: 99999999999\r\n\r\n")
                stats.record(kind, status)
            elif kind == "pipelined_close":
                body = json.dumps({"prompt": "a", "max_tokens": 50, "stream": True, "ignore_eos": True}).encode()
                raw(port, post_bytes("/v1/completions", body) + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
                    read=False)
                stats.record(kind, 0)
            elif kind == "bad_json":
                status, _ = server.request("POST", "/v1/completions", body="{not json")
                stats.record(kind, status)
        except RuntimeError as e:  # stream_completion: a non-200 status or an in-band error
            text = str(e)
            stats.record(kind, 500 if ("HTTP/1.1 5" in text or "stream error" in text) else 400, text)
        except (OSError, ValueError) as e:
            stats.record(kind + "_client_error", 0, str(e))
    for _, s in held:
        s.close()


def health_prober(server, stats, stop):
    while not stop.is_set():
        t = time.time()
        status, _ = server.request("GET", "/health", auth=False, timeout=10)
        ms = (time.time() - t) * 1000
        if status != 200:
            stats.record("health", 500, "health answered %d" % status)
        with stats.lock:
            stats.health_worst_ms = max(stats.health_worst_ms, ms)
        time.sleep(0.05)


def unauthenticated_bodies(server):
    """30 connections announcing 15 MiB bodies without a key, each sending all but the last byte."""
    before = rss_mb(server.proc.pid)
    socks, statuses = [], []
    chunk = b"x" * (1 << 20)
    for _ in range(30):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 15728641\r\n\r\n")
        socks.append(s)
    for s in socks:
        s.settimeout(10)
        sent = 0
        try:
            while sent < 15728640:
                s.sendall(chunk[: min(len(chunk), 15728640 - sent)])
                sent += len(chunk)
        except OSError:
            pass  # the server answered 401 and closed: the rest is not wanted
        try:
            statuses.append(int(s.recv(64)[9:12]))
        except (OSError, ValueError):
            statuses.append(0)
    grown = rss_mb(server.proc.pid) - before
    for s in socks:
        s.close()
    if any(st not in (401, 0) for st in statuses):
        fail("unauthenticated bodies got %s (want 401)" % sorted(set(statuses)))
    if grown >= 50:
        fail("30 unauthenticated 15 MiB bodies grew the server's RSS by %.0f MB (bound 50)" % grown)
    return grown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepinfer", required=True)
    ap.add_argument("--shared", required=True)
    args = ap.parse_args()
    model = os.path.join(args.shared, "models", "gguf", "stories260K.gguf")
    server = Server(args.deepinfer, model, ["--max-body-bytes", "16M", "--header-timeout", "2",
                                            "--body-timeout", "2", "--max-num-seqs", "32"])
    t0 = time.time()
    # Warm up (first structured request builds the grammar vocabulary), then take the baseline.
    server.post("/v1/completions", {"prompt": "x", "max_tokens": 2, "guided_choice": ["a"]})
    unauth_mb = unauthenticated_bodies(server)
    baseline = rss_mb(server.proc.pid)

    stats, stop = Stats(), threading.Event()
    threads = [threading.Thread(target=worker, args=(server, stats, stop, i)) for i in range(12)]
    threads.append(threading.Thread(target=health_prober, args=(server, stats, stop)))
    for t in threads:
        t.start()
    time.sleep(SOAK_SECONDS)
    stop.set()
    for t in threads:
        t.join(timeout=60)

    # Let aborted requests drain and stalled connections time out.
    deadline = time.time() + 15
    m = server.metrics()
    while time.time() < deadline and (m.get("deepinfer_num_requests_running", 1) or
                                      m.get("deepinfer_num_requests_waiting", 1) or
                                      m.get("deepinfer_kv_cache_blocks_in_use", 1)):
        time.sleep(0.2)
        m = server.metrics()
    grown = rss_mb(server.proc.pid) - baseline
    total = sum(stats.counts.values())
    print("soak: %d client actions in %.0f s: %s" % (total, SOAK_SECONDS, json.dumps(stats.counts, sort_keys=True)))
    print("soak: /health worst %.1f ms; RSS +%.1f MB after the soak, +%.1f MB for 30 unauthenticated "
          "15 MiB bodies" % (stats.health_worst_ms, grown, unauth_mb))
    if stats.server_errors:
        fail("%d responses with 5xx, e.g. %s" % (len(stats.server_errors), stats.server_errors[:3]))
    for key in ("deepinfer_num_requests_running", "deepinfer_num_requests_waiting",
                "deepinfer_kv_cache_blocks_in_use"):
        if m.get(key, -1) != 0:
            fail("%s = %s after the soak (want 0)" % (key, m.get(key)))
    if grown >= RSS_BOUND_MB:
        fail("RSS grew by %.0f MB during the soak (bound %.0f)" % (grown, RSS_BOUND_MB))
    if stats.health_worst_ms >= HEALTH_BOUND_MS:
        fail("/health took %.0f ms at worst (bound %.0f)" % (stats.health_worst_ms, HEALTH_BOUND_MS))
    server.stop()
    print("soak passed in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
