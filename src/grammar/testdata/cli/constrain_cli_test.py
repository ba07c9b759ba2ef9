#!/usr/bin/env python3
"""End-to-end test of `deepinfer constrain` on the files beside this script.

Each case runs the CLI with one model (tokenizer) and one constraint on one
file and checks the JSON line it prints. The labels of the JSON instances are
checked independently with python3-jsonschema first, so a wrong label fails
here rather than silently agreeing with the engine.

usage: constrain_cli_test.py --deepinfer build/deepinfer --shared ../shared
"""
import argparse
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("FAIL: python3-jsonschema is required (Debian: python3-jsonschema)")
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepinfer", required=True)
    ap.add_argument("--shared", required=True)
    args = ap.parse_args()
    models = {
        "llama3": os.path.join(args.shared, "models/tokenizers/llama3"),         # HF dir, 128k
        "spm": os.path.join(args.shared, "models/vocab/ggml-vocab-llama-spm.gguf"),  # vocab-only, 32k
        "stories": os.path.join(args.shared, "models/gguf/stories260K.gguf"),    # checkpoint, 512
        "qwen3": os.path.join(args.shared, "models/tokenizers/qwen3"),           # HF dir, 152k
    }
    failures = []

    # 1. Independent labels: JSON instances vs their schemas.
    label_cases = [
        ("person.schema.json", "person_ok1.json", True), ("person.schema.json", "person_ok2.json", True),
        ("person.schema.json", "person_ok_ws.json", True), ("person.schema.json", "person_ok1_newline.json", True),
        ("person.schema.json", "person_bad_age.json", False), ("person.schema.json", "person_bad_missing.json", False),
        ("person.schema.json", "person_bad_extra.json", False), ("person.schema.json", "person_bad_tags.json", False),
        ("tree.schema.json", "tree_ok.json", True), ("tree.schema.json", "tree_bad.json", False),
    ]
    checker = jsonschema.Draft202012Validator
    for schema, inst, valid in label_cases:
        s = json.load(open(path(schema)))
        ok = checker(s, format_checker=checker.FORMAT_CHECKER).is_valid(json.load(open(path(inst))))
        if ok != valid:
            failures.append(f"label of {inst} under {schema}: jsonschema says {ok}, test says {valid}")

    # 2. The CLI. (model, constraint args, file, accepted, extra checks)
    js = lambda name: ["--json-schema", path(name)]
    cases = [
        ("llama3", js("person.schema.json"), "person_ok1.json", True, {}),
        ("llama3", js("person.schema.json"), "person_bad_age.json", False, {}),
        ("llama3", js("tree.schema.json"), "tree_ok.json", True, {}),
        ("qwen3", js("person.schema.json"), "person_ok1.json", True, {}),
        # A file's trailing line breaks are not part of the instance (same
        # tokens as the file without them); --exact keeps them.
        ("llama3", js("person.schema.json"), "person_ok1_newline.json", True, {"tokens": "same:person_ok1.json"}),
        ("llama3", js("person.schema.json") + ["--exact"], "person_ok1_newline.json", False, {}),
        ("stories", ["--regex", r"\(\d{3}\) \d{3}-\d{4}"], "phone_ok_crlf.txt", True, {}),
        ("stories", ["--regex", r"\(\d{3}\) \d{3}-\d{4}\r\n", "--exact"], "phone_ok_crlf.txt", True, {}),
        ("spm", js("person.schema.json"), "person_ok2.json", True, {}),
        ("spm", js("person.schema.json"), "person_bad_missing.json", False, {}),
        ("spm", js("person.schema.json"), "person_bad_extra.json", False, {}),
        ("spm", js("person.schema.json"), "person_bad_tags.json", False, {}),
        ("spm", js("person.schema.json"), "person_ok_ws.json", False, {}),  # compact form by default
        ("spm", js("person.schema.json") + ["--any-whitespace"], "person_ok_ws.json", True, {}),
        ("spm", js("tree.schema.json"), "tree_bad.json", False, {}),
        ("spm", js("person.schema.json"), "prefix_only.json", False,
         {"complete": False, "rejected_at_token": "tokens"}),  # a valid prefix: not complete
        ("stories", ["--regex", r"\(\d{3}\) \d{3}-\d{4}"], "phone_ok.txt", True, {}),
        ("stories", ["--regex", r"\(\d{3}\) \d{3}-\d{4}"], "phone_bad.txt", False, {}),
        ("stories", ["--grammar", path("expr.gbnf")], "expr_ok.txt", True, {}),
        ("stories", ["--grammar", path("expr.gbnf")], "expr_bad.txt", False, {}),
        ("stories", ["--grammar", path("intlist.lark")], "intlist_ok.txt", True, {}),
        ("stories", ["--grammar", path("intlist.lark")], "intlist_bad.txt", False, {}),
        ("stories", ["--choice", "red,green,blue"], "color_ok.txt", True, {}),
        ("stories", ["--choice", "red,green,blue"], "color_bad.txt", False, {}),
        ("stories", ["--json-object"], "object_ok.json", True, {}),
        ("stories", ["--json-object"], "object_bad.json", False, {"rejected_at_token": 0}),
        # maxContains cannot be enforced exactly: best effort (default) relaxes
        # it and names it; --strict refuses the schema, naming it too.
        ("stories", js("unsupported.schema.json"), "object_ok.json", True,
         {"relaxed": ["contains with prefixItems, uniqueItems or min/maxContains other than 1 at #/properties/tags"]}),
        ("stories", js("unsupported.schema.json") + ["--strict"], "object_ok.json", False,
         {"compiled": False, "relaxed": []}),
    ]
    for model, cargs, check, accepted, extra in cases:
        cmd = [args.deepinfer, "constrain", "--model", models[model]] + cargs + ["--check", path(check)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        name = f"{model} {' '.join(cargs[:1])} {check}"
        if r.returncode != 0:
            failures.append(f"{name}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        lines = r.stdout.strip().splitlines()
        if len(lines) != 1:
            failures.append(f"{name}: expected one line, got {r.stdout!r}")
            continue
        out = json.loads(lines[0])
        keys = ["compiled", "error", "relaxed", "accepted", "rejected_at_token", "complete", "compile_ms",
                "mask_us_p50", "mask_us_p99", "mask_us_max", "tokens"]
        if list(out.keys()) != keys:
            failures.append(f"{name}: keys {list(out.keys())}")
            continue
        want = {"accepted": accepted}
        if extra.get("compiled", True):
            want["compiled"] = True
            want["error"] = None
        if accepted:
            want.update({"complete": True, "rejected_at_token": None})
        for k, v in extra.items():
            if v == "tokens":
                v = out["tokens"]
            elif isinstance(v, str) and v.startswith("same:"):  # the value on another file, same arguments
                other = [args.deepinfer, "constrain", "--model", models[model]] + cargs + ["--check", path(v[5:])]
                v = json.loads(subprocess.run(other, capture_output=True, text=True, timeout=300).stdout)[k]
            want[k] = v
        for k, v in want.items():
            if out[k] != v:
                failures.append(f"{name}: {k} = {out[k]!r}, want {v!r} (line {lines[0]})")
        if not accepted and out["compiled"] and out["rejected_at_token"] is None:
            failures.append(f"{name}: rejected without rejected_at_token")
        if out["compiled"] is False and not out["error"]:
            failures.append(f"{name}: compile failure without error text")
        if "--strict" in cargs and not ("maxContains" in (out["error"] or "") and "#/properties/tags" in out["error"]):
            failures.append(f"{name}: strict refusal does not name the keyword and pointer: {out['error']!r}")
        if out["relaxed"] and "warning" not in r.stderr:
            failures.append(f"{name}: relaxed assertions without a warning on stderr")
        if out["compiled"] and out["tokens"] <= 0:
            failures.append(f"{name}: no tokens")
        print(f"ok   {name}: accepted={out['accepted']} tokens={out['tokens']} compile={out['compile_ms']:.2f}ms "
              f"mask p50={out['mask_us_p50']:.1f}us p99={out['mask_us_p99']:.1f}us")

    # 3. Usage errors: non-zero exit, one line on stderr.
    usage = [
        ["constrain", "--model", models["stories"], "--regex", "a"],                     # no --check
        ["constrain", "--model", models["stories"], "--check", path("color_ok.txt")],     # no constraint
        ["constrain", "--model", models["stories"], "--regex", "a", "--choice", "a",
         "--check", path("color_ok.txt")],                                                # two constraints
        ["constrain", "--model", models["stories"], "--json-schema", "/nonexistent.json",
         "--check", path("color_ok.txt")],
        ["constrain", "--model", models["stories"], "--regex", "a", "--strict",
         "--check", path("color_ok.txt")],                                                # --strict without a schema
    ]
    for u in usage:
        r = subprocess.run([args.deepinfer] + u, capture_output=True, text=True, timeout=60)
        if r.returncode == 0 or not r.stderr.strip():
            failures.append(f"usage error {u[3:]}: exit {r.returncode}, stderr {r.stderr!r}")

    for f in failures:
        print("FAIL", f)
    print(f"{len(cases)} CLI cases, {len(label_cases)} labels, {len(usage)} usage errors: "
          f"{'FAILED' if failures else 'all passed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
