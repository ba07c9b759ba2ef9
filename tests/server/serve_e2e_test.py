#!/usr/bin/env python3
"""End-to-end test of `deepinfer serve` over real HTTP.

Starts the server on a free port with stories260K and an API key, then:
  (a) runs the official `openai` npm client (openai_client.mjs) for completions, chat,
      streaming and seeded sampling;
  (b) sends 256 concurrent streaming greedy requests and drops 20% of them mid-stream:
      every other request must produce exactly the single-request output, and /metrics
      must then show nothing running or waiting and the KV pool fully free;
  (c) sends malformed requests (bad JSON, wrong types, huge body, missing auth, unknown
      route) and checks the status codes and the OpenAI error shape;
  (d) on a second server (a synthetic tiny Llama with a 4096 context), sends a 2,000-token
      prompt twice: the second must report cached prompt tokens; both TTFTs are printed;
and finally SIGTERMs both servers, which must exit 0.

usage: serve_e2e_test.py --deepinfer BUILD/deepinfer --shared SHARED_DIR [--npm-prefix DIR]
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from npm_openai import ensure_openai

API_KEY = "e2e-test-key"
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, deepinfer, model, extra=()):
        self.port = free_port()
        cmd = [deepinfer, "serve", "--model", model, "--port", str(self.port), "--api-key", API_KEY,
               "--served-model-name", "e2e", "--threads", "1", *extra]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        deadline = time.time() + 60
        line = ""
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if line.startswith("listening on http://"):
                break
            if self.proc.poll() is not None:
                fail("server exited at start-up: " + "".join(self.stderr))
        expected = "listening on http://127.0.0.1:%d" % self.port
        if line.strip() != expected:
            fail("expected %r on stdout, got %r" % (expected, line))
        status, _ = self.request("GET", "/health", auth=False)
        if status != 200:
            fail("/health answered %d after 'listening'" % status)

    def request(self, method, path, body=None, auth=True, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Content-Type": "application/json"}
        if auth:
            h["Authorization"] = "Bearer " + API_KEY
        h.update(headers or {})
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        payload = resp.read()
        conn.close()
        return resp.status, payload

    def post(self, path, body, **kw):
        status, payload = self.request("POST", path, body, **kw)
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload

    def metrics(self):
        _, text = self.request("GET", "/metrics", auth=False)
        values = {}
        for line in text.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("server did not exit within 30 s of SIGTERM")
        if rc != 0:
            fail("server exited %d after SIGTERM: %s" % (rc, "".join(self.stderr)))


def stream_completion(port, body, cancel_after=None, timeout=120):
    """Streams /v1/completions. Returns (text, usage, ttft_s, events). With cancel_after=k,
    closes the socket after k text chunks and returns None."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    payload = json.dumps(dict(body, stream=True, stream_options={"include_usage": True})).encode()
    head = ("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Authorization: Bearer %s\r\nContent-Length: %d\r\n\r\n" % (API_KEY, len(payload))).encode()
    start = time.time()
    sock.sendall(head + payload)
    f = sock.makefile("rb")
    status_line = f.readline()
    if b" 200 " not in status_line:
        rest = f.read()
        sock.close()
        raise RuntimeError("HTTP error: %r %r" % (status_line, rest[:300]))
    while f.readline() not in (b"\r\n", b""):
        pass  # headers
    text, usage, ttft, chunks, buf = "", None, None, 0, b""
    while True:
        size_line = f.readline()
        if not size_line:
            raise RuntimeError("connection closed mid-stream")
        size = int(size_line.strip(), 16)
        if size == 0:
            f.readline()
            break
        buf += f.read(size)
        f.readline()
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event[len(b"data: "):].decode()
            if data == "[DONE]":
                continue
            obj = json.loads(data)
            if "error" in obj:
                raise RuntimeError("stream error: %s" % data)
            if obj.get("usage"):
                usage = obj["usage"]
            for c in obj.get("choices", []):
                if c.get("text"):
                    if ttft is None:
                        ttft = time.time() - start
                    text += c["text"]
                    chunks += 1
                    if cancel_after is not None and chunks >= cancel_after:
                        sock.close()
                        return None
    sock.close()
    return text, usage, ttft


def check_openai_client(server, npm_prefix):
    npm_error = ensure_openai(npm_prefix)
    if npm_error:
        fail(npm_error)
    r = subprocess.run(["node", os.path.join(HERE, "openai_client.mjs"), npm_prefix,
                        "http://127.0.0.1:%d/v1" % server.port, API_KEY, "e2e"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fail("openai client checks failed:\n" + r.stdout + r.stderr)
    print("(a) " + r.stdout.strip())


def check_concurrent_cancel(server):
    prompts = ["Once upon a time", "The cat sat", "Lily wanted to", "One day, a big"]
    reference = {}
    for p in prompts:
        status, r = server.post("/v1/completions", {"prompt": p, "max_tokens": 24, "temperature": 0,
                                                    "ignore_eos": True})
        if status != 200:
            fail("reference request: %d %r" % (status, r))
        reference[p] = r["choices"][0]["text"]
    n, errors, done = 256, [], [0]
    lock = threading.Lock()

    def worker(i):
        p = prompts[i % len(prompts)]
        cancel = i % 5 == 0  # 20%
        try:
            out = stream_completion(server.port, {"prompt": p, "max_tokens": 24, "temperature": 0,
                                                  "ignore_eos": True}, cancel_after=2 if cancel else None)
            if not cancel:
                text, usage, _ = out
                if text != reference[p]:
                    raise RuntimeError("request %d: %r != %r" % (i, text, reference[p]))
                if usage["completion_tokens"] != 24:
                    raise RuntimeError("request %d: usage %r" % (i, usage))
            with lock:
                done[0] += 1
        except Exception as e:  # noqa: BLE001 - collected and reported
            with lock:
                errors.append(str(e))

    start = time.time()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("%d of %d concurrent requests failed; first: %s" % (len(errors), n, errors[0]))
    elapsed = time.time() - start
    deadline = time.time() + 15
    while True:
        m = server.metrics()
        if (m["deepinfer_num_requests_running"] == 0 and m["deepinfer_num_requests_waiting"] == 0
                and m["deepinfer_kv_cache_usage_ratio"] == 0):
            break
        if time.time() > deadline:
            fail("after the burst /metrics still shows work or held KV: running=%g waiting=%g kv=%g" % (
                m["deepinfer_num_requests_running"], m["deepinfer_num_requests_waiting"],
                m["deepinfer_kv_cache_usage_ratio"]))
        time.sleep(0.1)
    print("(b) %d concurrent streams (%d cancelled) in %.1f s; KV pool free afterwards" % (n, n // 5, elapsed))


def check_malformed(server):
    def expect(status, got, what):
        if got != status:
            fail("%s: expected HTTP %d, got %d" % (what, status, got))

    status, body = server.post("/v1/completions", "{\"prompt\": ")
    expect(400, status, "bad JSON")
    if not (isinstance(body, dict) and set(body["error"]) == {"message", "type", "param", "code"}):
        fail("bad JSON: not an OpenAI error object: %r" % body)
    status, body = server.post("/v1/completions", {"prompt": "x", "max_tokens": "ten"})
    expect(400, status, "max_tokens as a string")
    if body["error"]["param"] != "max_tokens":
        fail("wrong-type error names param %r" % body["error"]["param"])
    status, _ = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": 3}]})
    expect(400, status, "chat content as a number")
    status, _ = server.post("/v1/completions", {"prompt": [1, 2, 99999]})
    expect(400, status, "token id out of range")
    status, _ = server.post("/v1/completions", {"prompt": "x", "temperature": -1})
    expect(400, status, "negative temperature")
    status, _ = server.post("/v1/completions", {"prompt": "x", "max_tokens": 100000})
    expect(400, status, "max_tokens past the context")
    status, _ = server.post("/v1/completions", {"prompt": "x"}, auth=False)
    expect(401, status, "missing API key")
    status, _ = server.post("/v1/completions", {"prompt": "x"}, auth=False, headers={"Authorization": "Bearer no"})
    expect(401, status, "wrong API key")
    status, _ = server.request("GET", "/v1/nothing")
    expect(404, status, "unknown route")
    # A 20 MB body: refused with 413 on its Content-Length, before the body is sent.
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                  "Content-Length: %d\r\n\r\n" % (API_KEY, 20 << 20)).encode())
    reply = sock.recv(4096)
    sock.close()
    if not reply.startswith(b"HTTP/1.1 413"):
        fail("huge body: expected 413, got %r" % reply[:60])
    status, _ = server.request("GET", "/health", auth=False)
    expect(200, status, "/health after the malformed requests")
    print("(c) malformed requests: 400/401/404/413 as expected")


def check_prefix_cache(deepinfer, tmp):
    model_dir = os.path.join(tmp, "tiny-llama")
    r = subprocess.run([deepinfer, "synth", "--arch", "llama", "--preset", "tiny", "--dtype", "f32", "--seed", "7",
                        "--out", model_dir, "--format", "hf"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("synth failed: " + r.stderr)
    cfg_path = os.path.join(model_dir, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["max_position_embeddings"] = 4096  # RoPE has no trained limit; room for a 2,000-token prompt
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)
    server = Server(deepinfer, model_dir, extra=("--max-model-len", "4096"))
    try:
        rng = random.Random(5)
        prompt = [rng.randrange(3, 500) for _ in range(2000)]
        body = {"prompt": prompt, "max_tokens": 4, "temperature": 0, "ignore_eos": True}
        _, usage1, ttft1 = stream_completion(server.port, body)
        _, usage2, ttft2 = stream_completion(server.port, body)
        cached1 = usage1["prompt_tokens_details"]["cached_tokens"]
        cached2 = usage2["prompt_tokens_details"]["cached_tokens"]
        if usage1["prompt_tokens"] != 2000 or usage2["prompt_tokens"] != 2000:
            fail("prompt_tokens %d / %d, expected 2000" % (usage1["prompt_tokens"], usage2["prompt_tokens"]))
        if cached1 != 0:
            fail("first request reports %d cached tokens on a cold cache" % cached1)
        if cached2 < 1900:
            fail("second request reports only %d cached prompt tokens" % cached2)
        print("(d) 2000-token prompt: TTFT cold %.1f ms, warm %.1f ms (ratio %.1fx), cached %d tokens" % (
            ttft1 * 1e3, ttft2 * 1e3, ttft1 / ttft2, cached2))
    finally:
        server.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepinfer", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--npm-prefix", default=os.path.expanduser("~/.cache/deepinfer-npm"))
    ap.add_argument("--skip", default="", help="comma list of parts to skip (a,b,c,d), for debugging")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    model = os.path.join(args.shared, "models", "gguf", "stories260K.gguf")
    t0 = time.time()
    server = Server(args.deepinfer, model)
    try:
        if "a" not in skip:
            check_openai_client(server, args.npm_prefix)
        if "b" not in skip:
            check_concurrent_cancel(server)
        if "c" not in skip:
            check_malformed(server)
    finally:
        server.stop()
    if "d" not in skip:
        with tempfile.TemporaryDirectory() as tmp:
            check_prefix_cache(args.deepinfer, tmp)
    print("server e2e passed in %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
