#!/usr/bin/env python3
"""The server's chat prompt vs Python Jinja2, byte for byte.

Every case is an OpenAI chat request. chat_prompt_render (src/server) renders it
the way deepinfer serve does (ParseChatRequest -> ChatTemplate); this script
renders it independently with Jinja2 3.x configured as Hugging Face's
apply_chat_template does (sandboxed, trim_blocks, lstrip_blocks, loopcontrols,
tojson = json.dumps(ensure_ascii=False)), after vLLM's message normalization
(text content parts joined with "\\n"; absent content is None). Templates:
the shared Llama-3, Qwen3 and DeepSeek-V3 tokenizer_config.json ones plus a probe
template that dumps every variable. Exit 1 on any difference (with both texts).

Needs /usr/bin/python3 with python3-jinja2 (scripts/install-deps.sh).
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

try:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("jinja2_compare_test: needs python3-jinja2 (apt-get install python3-jinja2)", file=sys.stderr)
    sys.exit(3)


def hf_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def reference_render(template, request, bos, eos):
    """HF's rendering; None content first, then "" (vLLM's value) if the template fails on None."""
    try:
        return render_once(template, request, bos, eos, null_as_empty=False)
    except Exception:  # noqa: BLE001
        if not any(m.get("content") is None for m in request["messages"]):
            raise
        return render_once(template, request, bos, eos, null_as_empty=True)


def render_once(template, request, bos, eos, null_as_empty):
    messages = []
    for m in request["messages"]:
        m = dict(m)
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(part["text"] for part in content)
        m["content"] = "" if content is None and null_as_empty else content
        # role and content first, then the other fields as sent (what the server's dict holds).
        messages.append({"role": m.pop("role"), "content": m.pop("content"), **m})
    cont = request.get("continue_final_message", False)
    add_generation_prompt = request.get("add_generation_prompt", True) and not cont
    kwargs = dict(request.get("chat_template_kwargs") or {})
    text = hf_environment().from_string(template).render(
        messages=messages, tools=request.get("tools"), documents=request.get("documents"),
        add_generation_prompt=add_generation_prompt, bos_token=bos, eos_token=eos, **kwargs)
    if cont:  # transformers' apply_chat_template
        final = messages[-1]["content"]
        loc = text.rindex(final.strip())
        if text[loc:loc + len(final)] == final:
            text = text[:loc + len(final)]
        else:
            text = text[:loc + len(final.strip())]
    return text


def token_text(config, key):
    v = config.get(key)
    if isinstance(v, dict):
        v = v.get("content")
    return v or ""


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "city": {"type": "string"},
                                                   "unit": {"type": "string", "enum": ["c", "f"]}},
                   "required": ["city"]}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}

TOOL_HISTORY = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Weather in Paris and the time?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"c\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 21.5}"},
    {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "12:00"},
]

CASES = {
    "system_user": {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]},
    "content_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": "first part"},
                                                                {"type": "text", "text": "second part"}]}]},
    "no_generation_prompt": {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
                             "add_generation_prompt": False},
    "continue_final_message": {"messages": [{"role": "user", "content": "Count to 5"},
                                            {"role": "assistant", "content": "1, 2, 3"}],
                               "continue_final_message": True, "add_generation_prompt": False},
    "tools_first_turn": {"messages": [{"role": "user", "content": "Weather in Paris?"}], "tools": [WEATHER, TIME]},
    "tool_history": {"messages": TOOL_HISTORY, "tools": [WEATHER, TIME]},
    "tool_history_no_tools_field": {"messages": TOOL_HISTORY},
    "tool_history_then_answer": {
        "messages": TOOL_HISTORY + [{"role": "assistant", "content": "It is 21.5 C and noon."},
                                    {"role": "user", "content": "Thanks"}], "tools": [WEATHER]},
    "assistant_content_and_call": {"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c", "content": "sunny"}], "tools": [WEATHER]},
    "enable_thinking_false": {"messages": [{"role": "user", "content": "Hi"}],
                              "chat_template_kwargs": {"enable_thinking": False}},
    "reasoning_history": {"messages": [{"role": "user", "content": "2+2?"},
                                       {"role": "assistant", "content": "4", "reasoning_content": "2 plus 2 is 4."},
                                       {"role": "user", "content": "3+3?"}]},
    "documents": {"messages": [{"role": "user", "content": "Summarize"}],
                  "documents": [{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta \u00e9"}]},
    "unicode_and_null": {"messages": [{"role": "user", "content": "caf\u00e9 \u4f60\u597d"},
                                      {"role": "assistant", "content": None},
                                      {"role": "user", "content": "again"}]},
}

# Prints every variable the server passes, so a dropped or reordered field shows.
PROBE_TEMPLATE = (
    "{% for m in messages %}[{{ m.role }}|{{ m.content is none }}|{{ m.content }}|{{ m | tojson }}]\n{% endfor %}"
    "tools={{ tools | tojson }} documents={{ documents | tojson }} agp={{ add_generation_prompt }}"
    " think={{ enable_thinking is defined and enable_thinking }} extra={{ extra | default('-') }}"
    "{% if tools %}{% for t in tools %} {{ t.function.name }}:{{ t.function.parameters | tojson }}{% endfor %}{% endif %}"
    "{% if add_generation_prompt %}<gen>{% endif %}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--render", required=True, help="build/src/server/chat_prompt_render")
    ap.add_argument("--shared", required=True)
    args = ap.parse_args()

    templates = {}
    for family in ("llama3", "qwen3", "deepseek_v3"):
        with open(os.path.join(args.shared, "models", "tokenizers", family, "tokenizer_config.json")) as f:
            config = json.load(f)
        templates[family] = (config["chat_template"], token_text(config, "bos_token"), token_text(config, "eos_token"))
    templates["probe"] = (PROBE_TEMPLATE, "<s>", "</s>")
    cases = dict(CASES)
    cases["probe_kwargs"] = {"messages": [{"role": "user", "content": "x", "name": "bob"}],
                             "chat_template_kwargs": {"enable_thinking": True, "extra": [1, 2.5, None, "s"]},
                             "tools": [WEATHER]}

    failures, checked, raised = 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        for family, (template, bos, eos) in templates.items():
            template_path = os.path.join(tmp, family + ".jinja")
            with open(template_path, "w") as f:
                f.write(template)
            for name, request in cases.items():
                request_path = os.path.join(tmp, "request.json")
                with open(request_path, "w") as f:
                    json.dump(request, f)
                try:
                    want = reference_render(template, copy.deepcopy(request), bos, eos)
                except Exception as e:  # noqa: BLE001 (any template failure: the server must fail too)
                    want = None
                    want_error = str(e)
                got = subprocess.run([args.render, template_path, request_path, bos, eos], capture_output=True)
                checked += 1
                if want is None:
                    raised.append(f"{family}/{name}")
                    if got.returncode == 0:
                        print(f"FAIL {family}/{name}: Jinja2 raised ({want_error}) but the server rendered",
                              file=sys.stderr)
                        failures += 1
                    continue
                text = got.stdout.decode("utf-8", "replace")
                if got.returncode != 0 or text != want:
                    failures += 1
                    print(f"FAIL {family}/{name}: rc={got.returncode} {got.stderr.decode()}\n--- jinja2 ---\n"
                          f"{want!r}\n--- server ---\n{text!r}", file=sys.stderr)
    print(f"jinja2_compare: {checked - failures}/{checked} agree ({checked - len(raised)} rendered identically; "
          f"both refused: {', '.join(raised) or 'none'})")
    if checked - len(raised) < 40:
        print("jinja2_compare: too few cases rendered to mean anything", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
