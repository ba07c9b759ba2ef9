#!/usr/bin/env python3
"""Tool calling, reasoning and request fields end to end (issue 18).

Models: `deepinfer synth --arch qwen3 --preset tiny --format hf --tokenizer SHARED/models/tokenizers/qwen3`
and the same with the Llama-3 and DeepSeek-V3 tokenizers (random weights, real vocabularies and chat
templates; parsers hermes, llama3_json and deepseek_v3, detected from the templates). With random
weights only grammar-forced output can be a valid call, so:
  - tool_choice "required" / named (also streamed) must return tool_calls whose arguments validate
    (jsonschema) against the declared parameters, finish_reason "tool_calls";
  - a tool-call / tool-result history must reach the prompt: /tokenize's messages form returns exactly
    the Jinja2-rendered text, and the chat request and a completion of the Jinja2-rendered prompt (tests/chat/jinja2_compare_test.py's renderer) agree on prompt tokens and on
    the greedy continuation with its logprobs;
  - response_format properties declared zeta, alpha, mid are generated in that order;
  - min_tokens holds EOS back, add_special_tokens adds BOS, chat echo, unsupported fields are 400s
    naming them, a reasoning block becomes reasoning_content (--reasoning-parser qwen3);
  - the Qwen3 model written as GGUF (template in tokenizer.chat_template) renders the history and
    forces a valid call the same way;
  - tool_choice "none" parses no calls and renders the tools as "auto" does (vLLM's default);
  - the official `openai` npm client runs tools_client.mjs (auto, required, named, parallel, streamed,
    a round trip whose prompt is checked against Jinja2 as above) against each model, and
    responses_tools_client.mjs (/v1/responses function tools: required, named, parallel, auto, none,
    streamed events and the client's stream helper, a function_call / function_call_output round trip
    whose prompt is the Jinja2 rendering of the equivalent chat request) against the Qwen3 and Llama-3 ones;
    every call's arguments validate (jsonschema).
usage: tools_e2e_test.py --deepinfer BUILD/deepinfer --shared SHARED [--npm-prefix DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "chat"))
import serve_e2e_test as e2e  # noqa: E402  (Server, fail)
from npm_openai import ensure_openai  # noqa: E402
import jinja2_compare_test as jc  # noqa: E402  (reference_render)

try:
    import jsonschema
except ImportError:
    print("tools_e2e_test: needs python3-jsonschema", file=sys.stderr)
    sys.exit(3)

fail = e2e.fail

# Bounded values only: random weights would otherwise write an endless string.
WEATHER_PARAMS = {"type": "object",
                  "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo", "Lima"]},
                                 "days": {"type": "integer", "minimum": 1, "maximum": 7},
                                 "unit": {"type": "string", "enum": ["c", "f"]}},
                  "required": ["city", "days"], "additionalProperties": False}
TIME_PARAMS = {"type": "object", "properties": {"tz": {"type": "string", "maxLength": 6}},
               "required": ["tz"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather forecast",
                                           "parameters": WEATHER_PARAMS}},
         {"type": "function", "function": {"name": "get_time", "parameters": TIME_PARAMS}}]
SCHEMAS = {"get_weather": WEATHER_PARAMS, "get_time": TIME_PARAMS}
USER = [{"role": "user", "content": "What is the weather in Paris?"}]


def check_calls(calls, names, where):
    if not calls:
        fail(where + ": no tool_calls")
    for call in calls:
        if call["type"] != "function" or not call["id"].startswith("call_"):
            fail(where + ": bad call shape " + json.dumps(call))
        fn = call["function"]
        if fn["name"] not in names:
            fail(where + ": called %r, allowed %r" % (fn["name"], names))
        if not isinstance(fn["arguments"], str):
            fail(where + ": arguments must be a JSON string")
        try:
            jsonschema.validate(json.loads(fn["arguments"]), SCHEMAS[fn["name"]])
        except (ValueError, jsonschema.ValidationError) as e:
            fail(where + ": arguments %r do not validate: %s" % (fn["arguments"], e))


def stream_chat(server, body):
    """SSE chat stream -> (tool_calls assembled from deltas, finish_reason, content)."""
    status, payload = server.request("POST", "/v1/chat/completions", dict(body, stream=True))
    if status != 200:
        fail("stream: HTTP %d %r" % (status, payload[:300]))
    calls, finish, content = {}, None, ""
    for line in payload.decode().splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        choice = json.loads(line[6:])["choices"][0]
        delta = choice["delta"]
        content += delta.get("content") or ""
        for d in delta.get("tool_calls") or []:
            c = calls.setdefault(d["index"], {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            c["id"] = d.get("id") or c["id"]
            c["function"]["name"] += d.get("function", {}).get("name") or ""
            c["function"]["arguments"] += d.get("function", {}).get("arguments") or ""
        finish = choice["finish_reason"] or finish
    return [calls[k] for k in sorted(calls)], finish, content


def check_forced_calls(server):
    for parallel in (False, True):
        for seed in range(3):
            body = {"messages": USER, "tools": TOOLS, "tool_choice": "required", "parallel_tool_calls": parallel,
                    "max_tokens": 200, "seed": seed, "temperature": 1.0}
            status, r = server.post("/v1/chat/completions", body)
            if status != 200:
                fail("required: HTTP %d %r" % (status, r))
            choice = r["choices"][0]
            if choice["finish_reason"] != "tool_calls":
                fail("required: finish_reason %r (%r)" % (choice["finish_reason"], choice))
            calls = choice["message"]["tool_calls"]
            check_calls(calls, SCHEMAS.keys(), "required")
            if not parallel and len(calls) != 1:
                fail("parallel_tool_calls false gave %d calls" % len(calls))
            if choice["message"]["content"] is not None:
                fail("required: content should be null, got %r" % choice["message"]["content"])
    named = {"messages": USER, "tools": TOOLS, "max_tokens": 200, "seed": 7,
             "tool_choice": {"type": "function", "function": {"name": "get_time"}}}
    status, r = server.post("/v1/chat/completions", named)
    if status != 200 or r["choices"][0]["finish_reason"] != "tool_calls":
        fail("named: %d %r" % (status, r))
    calls = r["choices"][0]["message"]["tool_calls"]
    check_calls(calls, ["get_time"], "named")
    streamed, finish, _ = stream_chat(server, named)
    if finish != "tool_calls":
        fail("streamed named: finish_reason %r" % finish)
    check_calls(streamed, ["get_time"], "streamed named")
    if [c["function"]["arguments"] for c in streamed] != [c["function"]["arguments"] for c in calls]:
        fail("streamed named call differs from the non-streamed one (same seed)")
    streamed, finish, _ = stream_chat(server, dict(named, tool_choice="required", seed=3, parallel_tool_calls=True))
    if finish != "tool_calls":
        fail("streamed required: finish_reason %r" % finish)
    check_calls(streamed, SCHEMAS.keys(), "streamed required")
    # "none": no calls parsed, but the template still gets the tools (vLLM's default), so the prompt is auto's.
    plain = {"messages": USER, "tools": TOOLS, "max_tokens": 8, "seed": 1}
    _, r_none = server.post("/v1/chat/completions", dict(plain, tool_choice="none"))
    _, r_auto = server.post("/v1/chat/completions", dict(plain, tool_choice="auto"))
    _, r_bare = server.post("/v1/chat/completions", {"messages": USER, "max_tokens": 8, "seed": 1})
    if r_none["choices"][0]["finish_reason"] == "tool_calls" or r_none["choices"][0]["message"].get("tool_calls"):
        fail("tool_choice none returned calls: %r" % r_none)
    if r_none["usage"]["prompt_tokens"] != r_auto["usage"]["prompt_tokens"]:
        fail("tool_choice none should render the tools as auto does: %r vs %r" % (r_none["usage"], r_auto["usage"]))
    tools_rendered = r_auto["usage"]["prompt_tokens"] > r_bare["usage"]["prompt_tokens"]
    print("tools_e2e: required / named / streamed / parallel calls validate; none parses no calls "
          "(tools %s by this template)" % ("rendered" if tools_rendered else "not rendered"))


def check_errors(server):
    bad = [({"tool_choice": "bogus", "tools": TOOLS}, "tool_choice"),
           ({"tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": TOOLS}, "tool_choice"),
           ({"tool_choice": "required"}, "tool_choice"),
           ({"tools": [{"type": "function", "function": {"parameters": {}}}]}, "tools"),
           ({"suffix": "x"}, "suffix"), ({"prompt_logprobs": 21}, "prompt_logprobs"),
           ({"prompt_logprobs": 1, "stream": True}, "prompt_logprobs"),
           ({"reasoning_effort": "high"}, "reasoning_effort"),
           ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages"),
           ({"chat_template_kwargs": {"messages": []}}, "chat_template_kwargs"),
           ({"continue_final_message": True, "add_generation_prompt": True}, "continue_final_message")]
    for extra, param in bad:
        status, r = server.post("/v1/chat/completions", dict({"messages": USER, "max_tokens": 2}, **extra))
        if status != 400 or r["error"]["param"] != param:
            fail("%r: expected 400 naming %r, got %d %r" % (extra, param, status, r))
    for field, value in (("suffix", "x"), ("prompt_logprobs", 21)):
        status, r = server.post("/v1/completions", {"prompt": "hi", field: value})
        if status != 400 or r["error"]["param"] != field:
            fail("completions %s: %d %r" % (field, status, r))
    status, r = server.post("/v1/chat/completions", {"messages": USER, "max_tokens": 2, "some_new_field": 1})
    if status != 200:
        fail("an unknown field must be a warning, not an error: %d %r" % (status, r))
    deadline = time.time() + 5
    while not any("some_new_field" in line for line in server.stderr) and time.time() < deadline:
        time.sleep(0.05)
    if not any("unknown field" in line and "some_new_field" in line for line in server.stderr):
        fail("an unknown field must be logged: stderr %r" % "".join(server.stderr)[-2000:])
    print("tools_e2e: bad tool_choice / unsupported fields are 400s naming the field; unknown ones a logged warning")


def greedy_fingerprint(server, route, body):
    """(prompt_tokens, the first 4 greedy tokens with their logprobs): equal fingerprints mean the same prompt
    tokens (count, and the next-token distribution at its end, which every prompt token feeds on random
    weights)."""
    body = dict(body, max_tokens=4, temperature=0, logprobs=True if route == "chat" else 1)
    if route == "chat":
        body["top_logprobs"] = 1
    status, r = server.post("/v1/chat/completions" if route == "chat" else "/v1/completions", body)
    if status != 200:
        fail("%s fingerprint: %d %r" % (route, status, r))
    lp = r["choices"][0]["logprobs"]
    pairs = ([(t["token"], t["logprob"]) for t in lp["content"]] if route == "chat"
             else list(zip(lp["tokens"], lp["token_logprobs"])))
    return r["usage"]["prompt_tokens"], pairs


def check_same_prompt(server, request, tokenizer_dir, where):
    """The server's chat prompt for `request` is the Jinja2-rendered text: /tokenize returns those bytes, and
    the chat request and a completion of the Jinja2 text (no BOS added: the template writes it) agree on
    prompt tokens and greedy continuation."""
    want_text = rendered(request, tokenizer_dir)
    # Byte for byte: /tokenize's messages form returns the rendered prompt (the chat route's renderer).
    status, r = server.post("/tokenize", {k: v for k, v in request.items() if k != "max_tokens"})
    if status != 200 or r.get("prompt") != want_text:
        fail("%s: /tokenize renders %r, Jinja2 %r" % (where, r.get("prompt", r), want_text))
    chat = greedy_fingerprint(server, "chat", request)
    text = greedy_fingerprint(server, "completion", {"prompt": want_text, "add_special_tokens": False})
    if chat[0] != text[0] or [t for t, _ in chat[1]] != [t for t, _ in text[1]] or any(
            abs(a - b) > 1e-3 for (_, a), (_, b) in zip(chat[1], text[1])):
        fail("%s: the chat prompt differs from the Jinja2 prompt: chat %r, Jinja2 text %r" % (where, chat, text))
    return chat[0]


def check_history_renders(server, tokenizer_dir):
    history = USER + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21}"}]
    for extra in ({}, {"chat_template_kwargs": {"enable_thinking": False}}):
        request = dict({"messages": history, "tools": TOOLS}, **extra)
        n = check_same_prompt(server, request, tokenizer_dir, "history %r" % extra)
    print("tools_e2e: a tool-call / tool-result history renders byte-identical to Jinja2 (/tokenize; %d tokens, same greedy logprobs)" % n)


def check_fields(server, end_ids, reasoning):
    # Property order: zeta, alpha, mid as declared.
    schema = {"type": "object", "properties": {"zeta": {"type": "integer", "minimum": 0, "maximum": 9},
                                               "alpha": {"type": "boolean"},
                                               "mid": {"type": "string", "enum": ["a", "b"]}},
              "required": ["zeta", "alpha", "mid"], "additionalProperties": False}
    status, r = server.post("/v1/chat/completions", {"messages": USER, "max_tokens": 60, "response_format": {
        "type": "json_schema", "json_schema": {"name": "o", "schema": schema}}})
    keys = list(json.loads(r["choices"][0]["message"]["content"], object_pairs_hook=lambda p: p))
    if status != 200 or [k for k, _ in keys] != ["zeta", "alpha", "mid"]:
        fail("response_format property order: %r" % (r,))
    # min_tokens: EOS pushed to +100 ends at once without it, not before 12 tokens with it.
    base = {"messages": USER, "max_tokens": 40, "logit_bias": {str(i): 100 for i in end_ids}}
    _, r0 = server.post("/v1/chat/completions", base)
    _, r1 = server.post("/v1/chat/completions", dict(base, min_tokens=12))
    if r0["usage"]["completion_tokens"] > 2 or r1["usage"]["completion_tokens"] < 12:
        fail("min_tokens: %d tokens without, %d with min_tokens 12" % (r0["usage"]["completion_tokens"],
                                                                        r1["usage"]["completion_tokens"]))
    if r1["choices"][0]["finish_reason"] != "stop":
        fail("min_tokens: EOS after the minimum should stop the request: %r" % r1["choices"][0])
    # Chat echo: the final assistant message's content leads the reply.
    _, r = server.post("/v1/chat/completions", {"messages": USER + [{"role": "assistant", "content": "Sunny and"}],
                                                "continue_final_message": True, "add_generation_prompt": False,
                                                "echo": True, "max_tokens": 3})
    if not r["choices"][0]["message"]["content"].startswith("Sunny and"):
        fail("chat echo: %r" % r)
    if reasoning:
        body = {"messages": USER, "max_tokens": 40, "seed": 5,
                "guided_regex": "<think>[a-z]{3,6}</think>\n\n[a-z]{2,5}"}
        _, r = server.post("/v1/chat/completions", body)
        m = r["choices"][0]["message"]
        if not (3 <= len(m.get("reasoning_content", "")) <= 6 and 2 <= len(m["content"]) <= 5 and "<" not in m["content"]):
            fail("reasoning: %r" % m)
        _, _, content = stream_chat(server, body)
        status, payload = server.request("POST", "/v1/chat/completions", dict(body, stream=True))
        streamed_reasoning = "".join(json.loads(l[6:])["choices"][0]["delta"].get("reasoning_content") or ""
                                     for l in payload.decode().splitlines()
                                     if l.startswith("data: {") and json.loads(l[6:])["choices"])
        if streamed_reasoning != m["reasoning_content"] or content != m["content"]:
            fail("streamed reasoning %r / content %r differ from %r" % (streamed_reasoning, content, m))
        print("tools_e2e: reasoning_content split (full and streamed)")
    print("tools_e2e: property order, min_tokens, chat echo")


def run_client(server, npm_prefix, family, tokenizer_dir):
    npm_error = ensure_openai(npm_prefix)
    if npm_error:
        fail(npm_error)
    r = subprocess.run(["node", os.path.join(HERE, "tools_client.mjs"), npm_prefix,
                        "http://127.0.0.1:%d/v1" % server.port, e2e.API_KEY, "e2e", family],
                       capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail("tools_client.mjs (%s) failed:\n%s%s" % (family, r.stdout[-3000:], r.stderr[-3000:]))
    for line in r.stdout.splitlines():
        if line.startswith("ROUNDTRIP "):
            request = json.loads(line[len("ROUNDTRIP "):])
            got = request.pop("prompt_tokens")
            want = check_same_prompt(server, request, tokenizer_dir, "the client's round trip")
            if got != want:
                fail("the client's round trip has %d prompt tokens, its Jinja2 prompt %d" % (got, want))
            print("tools_e2e: the client's round trip renders byte-identical to Jinja2 (/tokenize; %d tokens, same greedy logprobs)" % want)
        else:
            print(line)


def responses_to_chat(items, tools):
    """The chat request a Responses round trip stands for (OpenAI's mapping: a function_call item is a tool
    call of an assistant message, a function_call_output a tool message answering its call_id)."""
    messages, names = [], {}
    for item in items:
        if item.get("type") == "function_call":
            names[item["call_id"]] = item["name"]
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}}
            if messages and messages[-1]["role"] == "assistant":
                messages[-1].setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif item.get("type") == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"],
                             "name": names[item["call_id"]]})
        else:
            messages.append({"role": item["role"], "content": item["content"]})
    chat_tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in tools]
    return {"messages": messages, "tools": chat_tools}


def run_responses_client(server, npm_prefix, family, tokenizer_dir):
    """/v1/responses function tools with the openai client (responses_tools_client.mjs): every call's
    arguments validate against its declared schema; the round trip's prompt is the Jinja2 rendering of the
    equivalent chat conversation (same tokens, same greedy text as the chat route)."""
    r = subprocess.run(["node", os.path.join(HERE, "responses_tools_client.mjs"), npm_prefix,
                        "http://127.0.0.1:%d/v1" % server.port, e2e.API_KEY, "e2e", family],
                       capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        fail("responses_tools_client.mjs (%s) failed:\n%s%s" % (family, r.stdout[-3000:], r.stderr[-3000:]))
    validated = 0
    for line in r.stdout.splitlines():
        if line.startswith("CALL "):
            _, where, name, arguments = line.split(" ", 3)
            try:
                jsonschema.validate(json.loads(arguments), SCHEMAS[name])
            except (ValueError, KeyError, jsonschema.ValidationError) as e:
                fail("responses %s: %s(%s) does not validate: %s" % (where, name, arguments, e))
            validated += 1
        elif line.startswith("RESPONSES_ROUNDTRIP "):
            trip = json.loads(line[len("RESPONSES_ROUNDTRIP "):])
            request = responses_to_chat(trip["input"], trip["tools"])
            want = check_same_prompt(server, request, tokenizer_dir, "the responses round trip")
            if trip["input_tokens"] != want:
                fail("responses round trip: %d input tokens, its Jinja2 prompt %d" % (trip["input_tokens"], want))
            _, chat = server.post("/v1/chat/completions", dict(request, max_tokens=4, temperature=0))
            if (chat["choices"][0]["message"]["content"] or "") != trip["output_text"]:
                fail("responses round trip text %r != chat %r" % (trip["output_text"], chat["choices"][0]))
            print("tools_e2e: the responses round trip renders byte-identical to Jinja2 (%d tokens)" % want)
        else:
            print(line)
    if validated < 4:  # required, named, parallel, streamed
        fail("responses: only %d calls validated" % validated)
    print("tools_e2e: /v1/responses: %d function calls validate against their schemas (jsonschema)" % validated)


def rendered(request, tokenizer_dir):
    with open(os.path.join(tokenizer_dir, "tokenizer_config.json")) as f:
        config = json.load(f)
    return jc.reference_render(config["chat_template"], json.loads(json.dumps(request)),
                               jc.token_text(config, "bos_token"), jc.token_text(config, "eos_token"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepinfer", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--npm-prefix", default=os.path.expanduser("~/.cache/deepinfer-npm"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("qwen3", "llama3", "deepseek_v3"):
            tokenizer_dir = os.path.join(args.shared, "models", "tokenizers", family)
            model = os.path.join(tmp, family)
            r = subprocess.run([args.deepinfer, "synth", "--arch", "qwen3", "--preset", "tiny", "--format", "hf",
                                "--seed", "3", "--out", model, "--tokenizer", tokenizer_dir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                fail("synth --tokenizer %s: %s" % (family, r.stderr))
            if family == "qwen3":
                for flag in ("--tool-call-parser", "--reasoning-parser"):
                    t0 = time.time()
                    r = subprocess.run([args.deepinfer, "serve", model, flag, "bogus"], capture_output=True, text=True)
                    lines = r.stderr.strip().splitlines()
                    if r.returncode != 2 or len(lines) != 1 or flag not in lines[0] or time.time() - t0 > 1.0:
                        fail("serve %s bogus: rc %d, %r (%.2f s)" % (flag, r.returncode, r.stderr, time.time() - t0))
                print("tools_e2e: unknown --tool-call-parser / --reasoning-parser: one line, exit 2, < 1 s")
            extra = ["--reasoning-parser", "qwen3"] if family == "qwen3" else []
            server = e2e.Server(args.deepinfer, model, extra)
            try:
                check_forced_calls(server)
                check_errors(server)
                check_history_renders(server, tokenizer_dir)
                ends = {"qwen3": [151643, 151645], "llama3": [128001, 128009], "deepseek_v3": [1]}[family]
                check_fields(server, ends, reasoning=family == "qwen3")
                if family == "llama3":
                    _, with_bos = server.post("/v1/completions", {"prompt": "hello", "max_tokens": 1})
                    _, without = server.post("/v1/completions", {"prompt": "hello", "max_tokens": 1,
                                                                 "add_special_tokens": False})
                    if with_bos["usage"]["prompt_tokens"] != without["usage"]["prompt_tokens"] + 1:
                        fail("add_special_tokens false should drop BOS: %r %r" % (with_bos["usage"], without["usage"]))
                run_client(server, args.npm_prefix, family, tokenizer_dir)
                if family in ("qwen3", "llama3"):
                    run_responses_client(server, args.npm_prefix, family, tokenizer_dir)
            finally:
                server.stop()
            print("tools_e2e: %s ok" % family)
        # GGUF: the tokenizer as tokenizer.ggml.* and the template as tokenizer.chat_template.
        tokenizer_dir = os.path.join(args.shared, "models", "tokenizers", "qwen3")
        model = os.path.join(tmp, "qwen3.gguf")
        r = subprocess.run([args.deepinfer, "synth", "--arch", "qwen3", "--preset", "tiny", "--format", "gguf",
                            "--seed", "3", "--out", model, "--tokenizer", tokenizer_dir],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail("synth --format gguf --tokenizer qwen3: %s" % r.stderr)
        server = e2e.Server(args.deepinfer, model)
        try:
            check_history_renders(server, tokenizer_dir)
            status, r = server.post("/v1/chat/completions", {"messages": USER, "tools": TOOLS, "max_tokens": 200,
                                                             "tool_choice": "required", "seed": 4})
            if status != 200 or r["choices"][0]["finish_reason"] != "tool_calls":
                fail("gguf required: %d %r" % (status, r))
            check_calls(r["choices"][0]["message"]["tool_calls"], SCHEMAS.keys(), "gguf required")
        finally:
            server.stop()
        print("tools_e2e: qwen3 GGUF ok")
    print("tools_e2e: ok")


if __name__ == "__main__":
    main()
