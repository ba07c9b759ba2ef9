#!/usr/bin/env python3
"""The command line and start-up of `deepinfer` (issue 18, item 6), from outside.

  help      every command's --help exits 0 and gives each flag one line with "(default: ...)" or
            "(required)"; serve's --help lists every flag DESIGN.md names, and each flag it lists is
            accepted by the parser (a known flag followed by a bogus one fails on the bogus one).
  version   `deepinfer --version` and `deepinfer serve --version`: "deepinfer X.Y.Z (git REV)".
  fast      bad flags / values / host / port in use / --max-model-len above the model's context fail
            with one stderr line in < 1 s (the model is a 5 MB+ GGUF; a load is never started).
  serve     `serve MODEL` (positional), --host localhost: start-up summary (model, parameters, KV
            tokens and sequences, template, URL), /health; DEEPINFER_API_KEY; --enable-log-requests
            and the stats line; --generation-config (temperature 0 from generation_config.json makes
            requests without a temperature greedy; `none` ignores the file); --seed.
  chat      `generate --chat --chat-template T` equals `generate` on the prompt T renders to
            (rendered here by hand from the template's definition).
  vocab     a checkpoint whose own tokenizer.json has more tokens than the model fails at load.

usage: cli_serve_test.py DEEPINFER SHARED_DIR
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

DI, SHARED = sys.argv[1], sys.argv[2]
GGUF = os.path.join(SHARED, "models", "gguf", "stories260K.gguf")  # context 128, vocab 512
QWEN3_TOK = os.path.join(SHARED, "models", "tokenizers", "qwen3")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def run(args, env=None, timeout=60):
    t = time.monotonic()
    r = subprocess.run([DI, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return r, time.monotonic() - t


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- help and version
DESIGN_SERVE_FLAGS = ["model", "host", "port", "api-key", "served-model-name", "max-num-seqs", "max-model-len",
                      "max-num-batched-tokens", "kv-cache-memory", "block-size", "threads", "no-prefix-cache",
                      "no-async-scheduling", "batch-invariant", "speculative-method", "num-speculative-tokens",
                      "spec-schedule", "tokenizer", "kv-cache-dtype", "seed", "generation-config", "log-level",
                      "enable-log-requests", "stats-interval", "chat-template"]
FLAG_LINE = re.compile(r"^  --([a-z0-9-]+)( \S+)?\s+(.*)$")


def help_flags(cmd):
    r, _ = run([cmd, "--help"])
    check(r.returncode == 0 and r.stdout.startswith("usage: deepinfer " + cmd), cmd + " --help exits 0 with usage")
    flags = {}
    for line in r.stdout.splitlines():
        m = FLAG_LINE.match(line)
        if m and m.group(1) not in ("help", "version"):
            flags[m.group(1)] = (m.group(2) or "").strip(), m.group(3)
    bad = [f for f, (_, text) in flags.items() if not re.search(r"\((default: [^)]+|required)\)$", text)]
    check(flags and not bad, cmd + " --help: every flag line ends with its default (%d flags; bad: %s)"
          % (len(flags), bad))
    return flags


for cmd in ["generate", "score", "info", "synth", "bench", "bench-serve", "constrain"]:
    help_flags(cmd)
serve_flags = help_flags("serve")
missing = [f for f in DESIGN_SERVE_FLAGS if f not in serve_flags]
check(not missing, "serve --help lists every documented flag (missing: %s)" % missing)
r, _ = run(["serve", "-h"])
check(r.returncode == 0 and "--max-model-len" in r.stdout, "serve -h is --help")
unaccepted = []
for name, (metavar, _) in serve_flags.items():
    args = ["serve", "--" + name] + (["x"] if metavar else []) + ["--definitely-not-a-flag"]
    r, _ = run(args)
    if "definitely-not-a-flag" not in r.stderr:
        unaccepted.append(name)
check(not unaccepted, "serve accepts every flag its --help lists (refused: %s)" % unaccepted)

for args in (["--version"], ["serve", "--version"], ["generate", "--version"]):
    r, _ = run(args)
    check(r.returncode == 0 and re.fullmatch(r"deepinfer \d+\.\d+\.\d+ \(git ([0-9a-f]+|unknown)\)\n", r.stdout),
          "deepinfer %s prints the version (%r)" % (" ".join(args), r.stdout))


# ---- flag errors: fast, one line, before any load
busy = socket.socket()
busy.bind(("127.0.0.1", 0))
busy.listen(1)
busy_port = busy.getsockname()[1]
cases = {
    "unknown flag": (["serve", GGUF, "--bogus"], "unknown flag --bogus"),
    "bad port": (["serve", GGUF, "--port", "70000"], "--port"),
    "port not a number": (["serve", GGUF, "--port", "http"], "--port"),
    "port in use": (["serve", GGUF, "--port", str(busy_port)], str(busy_port)),
    "bad host": (["serve", GGUF, "--host", "300.1.2.3.4", "--port", "0"], "--host"),
    "bad log level": (["serve", GGUF, "--log-level", "loud"], "--log-level"),
    "bad stats interval": (["serve", GGUF, "--stats-interval", "-1"], "--stats-interval"),
    "two models": (["serve", GGUF, "--model", GGUF], "model"),
    "max-model-len above context": (["serve", GGUF, "--port", "0", "--max-model-len", "129"],
                                    "exceeds the model's context length of 128"),
    "generation-config missing": (["serve", GGUF, "--port", "0", "--generation-config", "/no/such.json"],
                                  "--generation-config"),
    "generate unknown flag": (["generate", GGUF, "--prompt", "x", "--bogus"], "--bogus"),
    "generate chat-template without chat": (["generate", GGUF, "--prompt", "x", "--chat-template", "/dev/null"],
                                            "--chat"),
}
for name, (args, needle) in cases.items():
    r, dt = run(args, timeout=30)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 or (r.returncode == 1 and name in ("port in use", "max-model-len above context")),
          "%s: exit code %d" % (name, r.returncode))
    check(len(lines) == 1 and needle in lines[0] and not r.stdout, "%s: one stderr line naming it (%r)"
          % (name, r.stderr.strip()[:200]))
    check(dt < 1.0, "%s: fails in %.3f s (< 1 s)" % (name, dt))
busy.close()


# ---- serve: positional model, start-up summary, host name, API key from the environment, logs
class Server:
    def __init__(self, args, env=None):
        self.port = free_port()
        self.proc = subprocess.Popen([DI, "serve", *args, "--port", str(self.port), "--threads", "1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.url_line = self.proc.stdout.readline()
        if not self.url_line.startswith("listening on http://"):
            self.proc.wait(10)
            raise SystemExit("FAIL: server did not start: " + "".join(self.stderr))

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request(method, path, body=None if body is None else json.dumps(body), headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(30)
        check(rc == 0, "server exits 0 on SIGTERM")
        time.sleep(0.1)
        return "".join(self.stderr)


env = dict(os.environ, DEEPINFER_API_KEY="env-key")
s = Server([GGUF, "--host", "localhost", "--enable-log-requests", "--stats-interval", "0.3"], env=env)
check(s.url_line.strip() == "listening on http://localhost:%d" % s.port, "positional model, --host localhost: "
      + s.url_line.strip())
status, _ = s.request("GET", "/health")
check(status == 200, "/health 200")
status, _ = s.request("GET", "/v1/models")
check(status == 401, "DEEPINFER_API_KEY: /v1/models without the key is 401")
auth = {"Authorization": "Bearer env-key", "Content-Type": "application/json"}
status, _ = s.request("GET", "/v1/models", headers=auth)
check(status == 200, "DEEPINFER_API_KEY: with the key, 200")
status, body = s.request("POST", "/v1/completions", {"prompt": "Once upon", "max_tokens": 5, "temperature": 0},
                         headers=auth)
check(status == 200, "a completion: %d %s" % (status, body[:200]))
time.sleep(0.8)
err = s.stop()
summary_needles = {
    "model and parameters": r"model .*stories260K\.gguf \(gguf, llama\), \d[\d.]*K parameters",
    "KV tokens and sequences": r"KV cache \w+, \d+ tokens \(\d+ blocks of 16\) = \d+ sequences of max-model-len 128",
    "template source": r"chat template: ",
    "URL": r"http://localhost:%d/v1" % s.port,
    "version": r"deepinfer \d+\.\d+\.\d+",
    "request log": r"request cmpl-[0-9a-f]+ choice 0: prompt \d+ tokens \(0 cached\), max_tokens 5, temperature 0"
                   r".*finish length, 5 tokens, first token [\d.]+ ms, total [\d.]+ ms",
    "stats line": r"stats: running \d+, waiting \d+, prompt [\d.]+ tok/s, generation [\d.]+ tok/s, KV usage",
}
for what, pattern in summary_needles.items():
    check(re.search(pattern, err) is not None, "stderr has the %s" % what)
if failures:
    print(err)

# ---- --generation-config and --seed on an HF copy (the GGUF has no generation_config.json)
tmp = tempfile.mkdtemp(prefix="di_cli_serve_")
try:
    hf = os.path.join(tmp, "hf")
    r, _ = run(["synth", "--arch", "llama", "--preset", "tiny", "--dtype", "f32", "--seed", "3", "--format", "hf",
                "--out", hf])
    check(r.returncode == 0, "synth hf")
    with open(os.path.join(hf, "generation_config.json"), "w") as f:
        json.dump({"temperature": 0.0, "top_p": 0.9, "do_sample": True}, f)
    prompt = {"prompt": [1, 2, 3, 4], "max_tokens": 12}

    def texts(server, n, extra=None):
        out = []
        for _ in range(n):
            status, body = server.request("POST", "/v1/completions", dict(prompt, **(extra or {})),
                                          headers={"Content-Type": "application/json"})
            out.append(json.loads(body)["choices"][0]["text"] if status == 200 else "HTTP %d" % status)
        return out

    s = Server([hf])
    default_runs = texts(s, 3)
    greedy = texts(s, 1, {"temperature": 0})[0]
    sampled = texts(s, 4, {"temperature": 1.0})
    err = s.stop()
    check("sampling defaults from %s/generation_config.json: temperature=0 top_p=0.9" % hf in err,
          "start-up names the generation config")
    check(default_runs == [greedy] * 3, "generation_config.json temperature 0: requests without one are greedy")
    check(len(set(sampled)) > 1, "a request's own temperature overrides the default")

    s = Server([hf, "--generation-config", "none"])
    none_runs = texts(s, 4)
    s.stop()
    check(len(set(none_runs)) > 1, "--generation-config none: the file is ignored (sampling at temperature 1)")

    s = Server([hf, "--generation-config", "none", "--seed", "7"])
    first = texts(s, 3)
    s.stop()
    s = Server([hf, "--generation-config", "none", "--seed", "7"])
    second = texts(s, 3)
    s.stop()
    check(first == second and len(set(first)) > 1,
          "--seed 7: a restarted server answers the same request sequence the same way (and requests differ)")

    # ---- generate --chat renders through the template
    tmpl = os.path.join(tmp, "t.jinja")
    with open(tmpl, "w") as f:
        f.write("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                "{% if add_generation_prompt %}[assistant]{% endif %}")
    base = ["generate", GGUF, "--temperature", "0", "--max-tokens", "12"]
    chat, _ = run(base + ["--chat", "--chat-template", tmpl, "--prompt", "Once upon a time"])
    plain, _ = run(base + ["--prompt", "[user] Once upon a time\n[assistant]"])
    other, _ = run(base + ["--prompt", "Once upon a time"])
    check(chat.returncode == 0 and chat.stdout == plain.stdout and chat.stdout != other.stdout,
          "generate --chat == generate on the rendered prompt (%r vs %r)" % (chat.stdout, plain.stdout))

    # ---- a checkpoint whose own tokenizer does not fit the model
    big = os.path.join(tmp, "bigvocab")
    shutil.copytree(hf, big)
    for name in ("tokenizer.json", "tokenizer.json.gz", "tokenizer_config.json"):
        if os.path.exists(os.path.join(big, name)):
            os.remove(os.path.join(big, name))
    shutil.copy(os.path.join(QWEN3_TOK, "tokenizer.json.gz"), big)
    r, _ = run(["serve", big, "--port", "0"])
    lines = r.stderr.strip().splitlines()
    check(r.returncode != 0 and len(lines) == 1 and "vocabulary has" in lines[0] and "the model's only" in lines[0],
          "a checkpoint tokenizer larger than the vocabulary fails at load: %r" % r.stderr.strip()[:200])
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("\ncli_serve_test: %d failed" % len(failures))
sys.exit(1 if failures else 0)
