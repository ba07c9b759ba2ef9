#!/usr/bin/env python3
"""The endpoints beside generation (issue 18, item 5), over real HTTP against `deepinfer serve`
on stories260K (its vocabulary is llama2.c's tok512 SentencePiece model, in shared/models/llama2c):

  tokenize    /tokenize ids equal SentencePiece's own encode of the same text (python3-sentencepiece
              on tok512.model, an independent implementation), BOS by add_special_tokens;
              return_token_strs are the pieces; the messages form returns the prompt rendered in the
              documented fallback format (hand-written here) and its ids equal /tokenize of that
              prompt and the chat route's usage.prompt_tokens; errors are 400s naming the field.
  round trip  /detokenize(/tokenize(text)) == text, whitespace runs and non-ASCII included;
              out-of-range ids are a 400.
  version     /version equals `deepinfer --version`.
  models      GET /v1/models/{id} is the card /v1/models lists (a percent-encoded id too); an
              unknown id is 404 in the OpenAI error shape; /v1/* needs the API key, /tokenize not.
  responses   /v1/responses with the official `openai` npm client (responses_client.mjs: text,
              instructions, streaming events and the client's stream helper, text.format
              json_schema / json_object, errors; models.retrieve).
  strict      response_format json_schema.strict (chat, completions) and text.format strict (responses):
              a schema with a relaxed assertion (uniqueItems over strings) is a 400 naming the keyword and
              its JSON pointer; best effort gives 200 with a top-level `warnings` entry (the first chunk of
              a stream; response.created of a Responses stream), and the server logs it once for all
              the identical requests.
  cors        with --allowed-origins: a preflight from an allowed origin gets 204 with the
              Access-Control-* headers, from another origin 403 without them; plain, streamed and
              error responses carry Access-Control-Allow-Origin only for an allowed origin.

usage: endpoints_test.py DEEPINFER SHARED_DIR [NPM_PREFIX]
"""
import http.client
import json
import os
import subprocess
import sys
import urllib.parse

from harness import ServeProcess, check, failures
from npm_openai import ensure_openai

DI, SHARED = sys.argv[1], sys.argv[2]
NPM_PREFIX = sys.argv[3] if len(sys.argv) > 3 else os.path.expanduser("~/.cache/deepinfer-npm")
HERE = os.path.dirname(os.path.abspath(__file__))
GGUF = os.path.join(SHARED, "models", "gguf", "stories260K.gguf")
SP_MODEL = os.path.join(SHARED, "models", "llama2c", "tok512.model")
API_KEY = "endpoints-key"
ORIGIN = "http://app.example"


class Server(ServeProcess):
    def __init__(self, args):
        super().__init__(DI, GGUF, args)

    def request(self, method, path, body=None, headers=None, auth=True):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"Content-Type": "application/json"}
        if auth:
            h["Authorization"] = "Bearer " + API_KEY
        h.update(headers or {})
        data = body if body is None or isinstance(body, (str, bytes)) else json.dumps(body)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        payload = r.read()
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, payload

    def post(self, path, body, **kw):
        status, _, payload = self.request("POST", path, body, **kw)
        try:
            return status, json.loads(payload)
        except ValueError:
            return status, payload



def is_error(body, param=None, code=None):
    """The OpenAI error shape, naming `param` / `code` when given."""
    if not isinstance(body, dict) or set(body) != {"error"}:
        return False
    e = body["error"]
    return (set(e) == {"message", "type", "param", "code"} and isinstance(e["message"], str)
            and (param is None or e["param"] == param) and (code is None or e["code"] == code))


try:
    import sentencepiece
except ImportError:  # scripts/install-deps.sh installs python3-sentencepiece
    sentencepiece = None
if sentencepiece is None and os.environ.get("CI"):
    raise SystemExit("FAIL: python3-sentencepiece is missing (scripts/install-deps.sh installs it)")

server = Server(["--api-key", API_KEY, "--served-model-name", "org/tiny-stories", "--allowed-origins",
                 ORIGIN + ",http://other.example"])
try:
    # ---- /tokenize against SentencePiece. Its normalizer collapses runs of spaces, which the
    # GGUF/HF tokenizers (and llama.cpp, HF tokenizers) do not, so those texts are round-trip only.
    sp_texts = ["Once upon a time", "Lily and Tom went to the park. They saw a big, red ball!",
                "Hello, world: the café costs 3.50€ (really?)", "x"]
    round_trip_only = ["a\n  b\t\tc   ", " leading space", "日本語 and emoji 🐈", "line one\nline two\n"]
    if sentencepiece is None:
        print("SKIP  SentencePiece comparison: python3-sentencepiece is not installed "
              "(scripts/install-deps.sh installs it)")
        sp = None
    else:
        sp = sentencepiece.SentencePieceProcessor(model_file=SP_MODEL)
    for text in sp_texts:
        status, with_bos = server.post("/tokenize", {"prompt": text}, auth=False)
        status2, without = server.post("/tokenize", {"prompt": text, "add_special_tokens": False}, auth=False)
        check(status == 200 and status2 == 200, "/tokenize %r: 200 without the API key" % text)
        if status != 200 or status2 != 200:
            continue
        check(with_bos["tokens"] == [1] + without["tokens"], "/tokenize %r: add_special_tokens adds BOS (1) only"
              % text)
        check(with_bos["count"] == len(with_bos["tokens"]) and with_bos["max_model_len"] == 128
              and with_bos["token_strs"] is None, "/tokenize %r: count, max_model_len, token_strs null" % text)
        if sp is not None:
            expected = sp.encode(text)
            check(without["tokens"] == expected, "/tokenize %r == SentencePiece encode (%s vs %s)"
                  % (text, without["tokens"], expected))
    if sp is not None:
        status, body = server.post("/tokenize", {"prompt": "Once upon a time", "return_token_strs": True}, auth=False)
        expected = ["<s>"] + [sp.id_to_piece(i) for i in sp.encode("Once upon a time")]
        check(status == 200 and body["token_strs"] == expected, "return_token_strs: the pieces (%s)"
              % body.get("token_strs"))

    # ---- round trip
    for text in sp_texts + round_trip_only:
        _, tok = server.post("/tokenize", {"prompt": text, "add_special_tokens": False}, auth=False)
        status, body = server.post("/detokenize", {"tokens": tok["tokens"]}, auth=False)
        check(status == 200 and body == {"prompt": text}, "detokenize(tokenize(%r)) == text (%r)"
              % (text, body))
    _, tok = server.post("/tokenize", {"prompt": "Once upon a time"}, auth=False)
    status, body = server.post("/detokenize", {"tokens": tok["tokens"]}, auth=False)
    check(status == 200 and body["prompt"].startswith("<s>") and body["prompt"].endswith("Once upon a time"),
          "detokenize renders BOS as its text (skip_special_tokens false, as vLLM): %r" % body)
    status, body = server.post("/detokenize", {"tokens": []}, auth=False)
    check(status == 200 and body == {"prompt": ""}, "detokenize [] == ''")

    # ---- the messages form: the rendered prompt (the fallback format, docs/serving.md) and its ids
    messages = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story."}]
    rendered = "<|system|>\nBe kind.\n<|user|>\nTell me a story.\n<|assistant|>\n"
    status, chat_tok = server.post("/tokenize", {"model": "org/tiny-stories", "messages": messages}, auth=False)
    check(status == 200 and chat_tok.get("prompt") == rendered, "messages form returns the rendered prompt (%r)"
          % chat_tok.get("prompt"))
    _, plain = server.post("/tokenize", {"prompt": rendered}, auth=False)
    check(chat_tok.get("tokens") == plain["tokens"], "messages form ids == /tokenize of the rendered prompt")
    status, chat = server.post("/v1/chat/completions", {"messages": messages, "max_tokens": 1})
    check(status == 200 and chat["usage"]["prompt_tokens"] == chat_tok.get("count"),
          "messages form count == the chat route's prompt_tokens (%s vs %s)"
          % (chat_tok.get("count"), chat.get("usage")))
    _, no_bos = server.post("/tokenize", {"messages": messages, "add_special_tokens": False}, auth=False)
    check(no_bos.get("tokens") == plain["tokens"][1:], "messages form, add_special_tokens false: no BOS")

    # ---- errors
    bad = [
        ({}, "prompt", "neither prompt nor messages"),
        ({"prompt": "x", "messages": messages}, "messages", "both prompt and messages"),
        ({"prompt": 5}, "prompt", "prompt not a string"),
        ({"prompt": "x", "add_special_tokens": "yes"}, "add_special_tokens", "add_special_tokens not a bool"),
        ({"prompt": "x", "return_token_strs": 1}, "return_token_strs", "return_token_strs not a bool"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages", "bad message content"),
    ]
    for body, param, what in bad:
        status, err = server.post("/tokenize", body, auth=False)
        check(status == 400 and is_error(err, param=param), "/tokenize %s: 400 naming %s (%s)" % (what, param, err))
    status, err = server.post("/tokenize", {"prompt": "x", "model": "other"}, auth=False)
    check(status == 404 and is_error(err, param="model", code="model_not_found"), "/tokenize unknown model: 404")
    status, err = server.post("/tokenize", "{\"prompt\": ", auth=False)
    check(status == 400 and is_error(err), "/tokenize bad JSON: 400")
    for body, what in [({"tokens": [1, 512]}, "id past the vocabulary"), ({"tokens": [-1]}, "negative id"),
                       ({"tokens": "1 2"}, "not a list"), ({}, "missing"), ({"tokens": [1.5]}, "not integers")]:
        status, err = server.post("/detokenize", body, auth=False)
        check(status == 400 and is_error(err, param="tokens"), "/detokenize %s: 400 naming tokens" % what)
    status, _, _ = server.request("GET", "/tokenize", auth=False)
    check(status == 405, "GET /tokenize: 405")

    # ---- /version
    r = subprocess.run([DI, "--version"], capture_output=True, text=True)
    status, _, payload = server.request("GET", "/version", auth=False)
    v = json.loads(payload) if status == 200 else {}
    check(status == 200 and r.stdout.strip() == "deepinfer %s (git %s)" % (v.get("version"), v.get("git_revision")),
          "/version (%s) matches deepinfer --version (%s)" % (v, r.stdout.strip()))

    # ---- GET /v1/models/{id}
    _, _, listed = server.request("GET", "/v1/models")
    card = json.loads(listed)["data"][0]
    status, _, payload = server.request("GET", "/v1/models/org/tiny-stories")
    check(status == 200 and json.loads(payload) == card, "GET /v1/models/org/tiny-stories == the listed card")
    status, _, payload = server.request("GET", "/v1/models/" + urllib.parse.quote("org/tiny-stories", safe=""))
    check(status == 200 and json.loads(payload) == card, "GET /v1/models/org%2Ftiny-stories (percent-encoded)")
    status, _, payload = server.request("GET", "/v1/models/nope")
    check(status == 404 and is_error(json.loads(payload), param="model", code="model_not_found")
          and json.loads(payload)["error"]["type"] == "invalid_request_error",
          "unknown model id: 404 in the OpenAI error shape (%s)" % payload[:200])
    status, _, _ = server.request("GET", "/v1/models/org/tiny-stories", auth=False)
    check(status == 401, "GET /v1/models/{id} without the API key: 401")
    status, _, _ = server.request("POST", "/v1/models/org/tiny-stories", "{}")
    check(status == 405, "POST /v1/models/{id}: 405")

    # ---- /v1/responses with the openai client
    npm_error = ensure_openai(NPM_PREFIX)
    check(npm_error is None, "npm install openai@4: %s" % npm_error)
    r = subprocess.run(["node", os.path.join(HERE, "responses_client.mjs"), NPM_PREFIX,
                        "http://127.0.0.1:%d/v1" % server.port, API_KEY, "org/tiny-stories"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "openai client, /v1/responses and models.retrieve:\n" + r.stdout + r.stderr[-3000:])
    status, err = server.post("/v1/responses", {"input": "x", "tools": [{"type": "web_search"}]})
    check(status == 400 and is_error(err, param="tools", code="unsupported"),
          "/v1/responses hosted tools: 400 naming tools (function tools only)")
    status, err = server.post("/v1/responses", {"input": "x", "tools": [{"type": "function", "name": "f"}],
                                                "tool_choice": "required"})
    check(status == 400 and is_error(err, param="tool_choice"),
          "/v1/responses tool_choice required on a template of no known tool-call format: 400 naming tool_choice")
    status, err = server.post("/v1/responses", {"input": "x", "bogus": 1})
    check(status == 400 and is_error(err, param="bogus"), "/v1/responses unknown field: 400 naming it")

    # ---- json_schema.strict and relaxed-assertion warnings (issue 17): uniqueItems over strings is relaxed
    # (docs/structured-output.md's keyword table: enforced only for finite item sets).
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "maxLength": 5},
                                                        "uniqueItems": True, "maxItems": 3}},
              "required": ["tags"], "additionalProperties": False}
    chat = {"messages": [{"role": "user", "content": "Tags?"}], "max_tokens": 24, "temperature": 0}

    def rf(strict):
        js = {"name": "tags", "schema": schema}
        if strict is not None:
            js["strict"] = strict
        return {"type": "json_schema", "json_schema": js}

    def names_it(err):
        m = err["error"]["message"] if is_error(err) else ""
        return "uniqueItems" in m and "#/properties/tags" in m

    def warned(body, param):
        w = body.get("warnings") if isinstance(body, dict) else None
        return (isinstance(w, list) and len(w) == 1 and w[0]["pointer"] == "#/properties/tags"
                and w[0]["keyword"].startswith("uniqueItems") and w[0]["param"] == param
                and w[0]["type"] == "relaxed_schema_assertion" and "uniqueItems" in w[0]["message"])

    def log_lines():
        return [l for l in server.stderr if "relaxed assertions" in l and "#/properties/tags" in l]

    status, err = server.post("/v1/chat/completions", dict(chat, response_format=rf(True)))
    check(status == 400 and is_error(err, param="response_format", code="unsupported") and names_it(err),
          "chat json_schema strict: 400 naming uniqueItems and #/properties/tags (%s)" % (err,))
    status, err = server.post("/v1/completions", {"prompt": "Tags:", "max_tokens": 4, "response_format": rf(True)})
    check(status == 400 and names_it(err), "completions response_format strict: 400 naming keyword and pointer")
    status, err = server.post("/v1/responses", {"input": "Tags?", "max_output_tokens": 4, "text": {"format": {
        "type": "json_schema", "name": "tags", "schema": schema, "strict": True}}})
    check(status == 400 and is_error(err, param="text.format") and names_it(err),
          "responses text.format strict: 400 naming keyword and pointer, param text.format (%s)" % (err,))
    check(log_lines() == [], "a refused strict schema logs no relaxed assertions")
    bodies = []
    for strict in (False, None):  # two identical best-effort schemas (strict false = absent)
        status, body = server.post("/v1/chat/completions", dict(chat, response_format=rf(strict)))
        bodies.append(body)
        check(status == 200 and warned(body, "response_format"),
              "chat json_schema strict=%s: 200 with the relaxed assertion in 'warnings' (%s)" % (strict, body))
    status, _, payload = server.request("POST", "/v1/chat/completions",
                                        dict(chat, response_format=rf(False), stream=True))
    chunks = [json.loads(l[6:]) for l in payload.decode().splitlines() if l.startswith("data: {")]
    check(status == 200 and chunks and warned(chunks[0], "response_format")
          and not any("warnings" in c for c in chunks[1:]),
          "streamed chat: the first chunk carries the warnings, no other chunk")
    status, body = server.post("/v1/completions", {"prompt": "Tags:", "max_tokens": 8, "guided_json": schema})
    check(status == 200 and warned(body, "guided_json"), "completions guided_json: 200 with warnings (param guided_json)")
    status, body = server.post("/v1/responses", {"input": "Tags?", "max_output_tokens": 8, "text": {"format": {
        "type": "json_schema", "name": "tags", "schema": schema}}})
    check(status == 200 and warned(body, "text.format"), "responses text.format: 200 with warnings (param text.format)")
    status, _, payload = server.request("POST", "/v1/responses", {"input": "Tags?", "max_output_tokens": 8,
                                                                 "stream": True, "text": {"format": {
                                                                     "type": "json_schema", "name": "tags",
                                                                     "schema": schema}}})
    events = [json.loads(l[6:]) for l in payload.decode().splitlines() if l.startswith("data: {")]
    check(status == 200 and events and events[0]["type"] == "response.created"
          and warned(events[0]["response"], "text.format") and warned(events[-1]["response"], "text.format"),
          "streamed responses: response.created and the final response carry the warnings")
    # Every best-effort request above compiled the same schema text once (the grammar cache): one log line.
    check(len(log_lines()) == 1, "the server logs the relaxed assertion once per schema, not per request (%r)"
          % log_lines())
    status, body = server.post("/v1/chat/completions", dict(chat, response_format={
        "type": "json_schema", "json_schema": {"name": "e", "strict": True, "schema": {
            "type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]},
                                                      "uniqueItems": True}}, "required": ["tags"]}}}))
    check(status == 200 and "warnings" not in body, "a schema enforced exactly: strict passes, no warnings field")

    # ---- CORS
    pre = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
           "Access-Control-Request-Headers": "authorization, content-type"}
    status, h, _ = server.request("OPTIONS", "/v1/chat/completions", headers=pre, auth=False)
    check(status == 204 and h.get("access-control-allow-origin") == ORIGIN
          and "POST" in h.get("access-control-allow-methods", "")
          and "authorization" in h.get("access-control-allow-headers", "").lower(),
          "preflight from an allowed origin: 204 with the Access-Control-* headers (%s)" % h)
    status, h, _ = server.request("OPTIONS", "/v1/chat/completions", headers=dict(pre, Origin="http://evil.example"),
                                  auth=False)
    check(status == 403 and "access-control-allow-origin" not in h, "preflight from another origin: 403, no ACAO")
    status, h, _ = server.request("OPTIONS", "/tokenize", headers=dict(pre, Origin="http://other.example"),
                                  auth=False)
    check(status == 204 and h.get("access-control-allow-origin") == "http://other.example",
          "preflight from the second listed origin: 204")
    status, h, _ = server.request("GET", "/v1/models", headers={"Origin": ORIGIN})
    check(status == 200 and h.get("access-control-allow-origin") == ORIGIN and "Origin" in h.get("vary", ""),
          "GET from an allowed origin: ACAO and Vary: Origin")
    status, h, _ = server.request("GET", "/v1/models", headers={"Origin": "http://evil.example"})
    check(status == 200 and "access-control-allow-origin" not in h, "GET from another origin: no ACAO")
    status, h, _ = server.request("GET", "/v1/models")
    check("access-control-allow-origin" not in h, "no Origin: no ACAO")
    status, h, _ = server.request("GET", "/v1/models", headers={"Origin": ORIGIN}, auth=False)
    check(status == 401 and h.get("access-control-allow-origin") == ORIGIN,
          "a 401 to an allowed origin carries ACAO (the page can read the error)")
    status, h, payload = server.request("POST", "/v1/completions", {"prompt": "Once", "max_tokens": 3, "stream": True},
                                        headers={"Origin": ORIGIN})
    check(status == 200 and h.get("access-control-allow-origin") == ORIGIN and payload.endswith(b"data: [DONE]\n\n"),
          "a streamed response to an allowed origin carries ACAO")
finally:
    server.stop()

# Without --allowed-origins no response names an origin, and a preflight is not answered as CORS.
server = Server([])
try:
    status, h, _ = server.request("GET", "/v1/models", headers={"Origin": ORIGIN}, auth=False)
    check(status == 200 and "access-control-allow-origin" not in h, "no --allowed-origins: no ACAO")
    status, h, _ = server.request("OPTIONS", "/v1/models", headers={"Origin": ORIGIN,
                                                                    "Access-Control-Request-Method": "GET"},
                                  auth=False)
    check("access-control-allow-origin" not in h, "no --allowed-origins: a preflight gets no ACAO (%d)" % status)
finally:
    server.stop()

print("\nendpoints_test: %d failed" % len(failures))
sys.exit(1 if failures else 0)
