#!/usr/bin/env python3
"""bench/structured.py: structured-output compile time and per-token mask
time over a suite of JSON schemas and grammars on three vocabularies
(llama3 128k, llama-spm 32k, qwen3 152k), measured with `deepinfer
constrain` (one fresh process per case, so the masks are a *first request*:
lazily computed cache entries included; mask times are thread CPU time).

usage: python3 bench/structured.py [--deepinfer build/deepinfer] [--shared ../shared]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "src/grammar/testdata/cli")

SCHEMAS = {
    "person": ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
                "email": {"type": "string", "format": "email"}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["name", "age"], "additionalProperties": False},
               {"name": "Alice Johnson", "age": 34, "email": "alice.johnson@example.com", "tags": ["engineer", "team lead", "remote"]}),
    "product": ({"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "title": {"type": "string", "maxLength": 80},
                 "price": {"type": "number", "minimum": 0}, "in_stock": {"type": "boolean"},
                 "dimensions": {"type": "object", "properties": {"w": {"type": "number"}, "h": {"type": "number"}}, "required": ["w", "h"]},
                 "released": {"type": "string", "format": "date"}}, "required": ["id", "title", "price"]},
                {"id": "123e4567-e89b-12d3-a456-426614174000", "title": "Ergonomic wireless keyboard with backlight", "price": 49.99,
                 "in_stock": True, "dimensions": {"w": 44.5, "h": 3.2}, "released": "2024-03-15"}),
    "tree": ({"$defs": {"node": {"type": "object", "properties": {"label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
              "required": ["label"]}}, "$ref": "#/$defs/node"},
             {"label": "root", "children": [{"label": "left child", "children": [{"label": "leaf one"}]}, {"label": "right child"}]}),
    "enum+anyOf": ({"type": "object", "properties": {"status": {"enum": ["active", "inactive", "pending"]},
                    "value": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}, "note": {"type": ["string", "null"]}},
                    "required": ["status", "value", "note"], "additionalProperties": False},
                   {"status": "pending", "value": "forty two", "note": None}),
    "any-object": ({"type": "object"},
                   {"query": "weather in Paris", "results": [{"day": "Monday", "high": 21.5, "low": 12, "conditions": ["sunny", "light wind"]}], "ok": True}),
    "long-text": ({"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"], "additionalProperties": False},
                  {"summary": "The quick brown fox jumps over the lazy dog. Structured generation constrains every token so that the output always parses."}),
    "array-of-int": ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 20}, list(range(100, 115))),
    "pattern-props": ({"type": "object", "properties": {"id": {"type": "integer"}},
                       "patternProperties": {"^x-": {"type": "string"}, "_count$": {"type": "integer", "minimum": 0}},
                       "additionalProperties": False},
                      {"id": 7, "x-trace": "abc-123", "x-owner": "team blue", "item_count": 42}),
    "number-range": ({"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                      "lon": {"type": "number", "minimum": -180, "exclusiveMaximum": 180},
                      "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}},
                      "required": ["lat", "lon", "score"], "additionalProperties": False},
                     {"lat": 48.8566, "lon": -2.3522, "score": 0.875}),
    # User patterns and minLength inside strings: an end-anchored and an
    # unanchored pattern, a fixed-shape code, minLength without maxLength.
    "string-patterns": ({"type": "object", "properties": {"file": {"type": "string", "pattern": "\\.json$"},
                         "sku": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
                         "note": {"type": "string", "pattern": "urgent"}, "comment": {"type": "string", "minLength": 12}},
                         "required": ["file", "sku", "note", "comment"], "additionalProperties": False},
                        {"file": "reports/q3 summary.json", "sku": "ABC-1234", "note": "not urgent, next week",
                         "comment": "Checked by the night shift on Tuesday."}),
}
GRAMMARS = [
    ("regex-phone", ["--regex", r"\(\d{3}\) \d{3}-\d{4}"], "(555) 123-4567"),
    ("gbnf-expr", ["--grammar", os.path.join(CLI, "expr.gbnf")], "(12+34)*56-7/8+(9*(10+11))"),
    ("lark-intlist", ["--grammar", os.path.join(CLI, "intlist.lark")], "[1,22,333,4444,55555]"),
    ("choice", ["--choice", "alpha,beta,gamma,delta"], "gamma"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepinfer", default=os.path.join(ROOT, "build/deepinfer"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "../shared"))
    args = ap.parse_args()
    vocabs = [("llama3-128k", os.path.join(args.shared, "models/tokenizers/llama3")),
              ("spm-32k", os.path.join(args.shared, "models/vocab/ggml-vocab-llama-spm.gguf")),
              ("qwen3-152k", os.path.join(args.shared, "models/tokenizers/qwen3"))]
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"structured_bench_{os.getpid()}")
    os.makedirs(tmp, exist_ok=True)
    cases = []
    for name, (schema, instance) in SCHEMAS.items():
        sp, ip = os.path.join(tmp, name + ".schema.json"), os.path.join(tmp, name + ".json")
        json.dump(schema, open(sp, "w"))
        open(ip, "w").write(json.dumps(instance, separators=(",", ":")))
        cases.append(("json:" + name, ["--json-schema", sp], ip))
    for name, cargs, text in GRAMMARS:
        ip = os.path.join(tmp, name + ".txt")
        open(ip, "w").write(text)
        cases.append((name, cargs, ip))

    print(f"{'vocabulary':12} {'case':18} {'tokens':>6} {'compile':>9} {'mask p50':>9} {'mask p99':>9} {'mask max':>9}  ok")
    bad = 0
    for vname, vpath in vocabs:
        compiles, p50s, p99s, json_p99 = [], [], [], []
        for cname, cargs, inst in cases:
            r = subprocess.run([args.deepinfer, "constrain", "--model", vpath] + cargs + ["--check", inst],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{vname:12} {cname:18} ERROR {r.stderr.strip()}")
                bad += 1
                continue
            o = json.loads(r.stdout)
            ok = o["accepted"] and o["complete"]
            bad += 0 if ok else 1
            compiles.append(o["compile_ms"])
            p50s.append(o["mask_us_p50"])
            p99s.append(o["mask_us_p99"])
            if cname.startswith("json:"):
                json_p99.append(o["mask_us_p99"])
            print(f"{vname:12} {cname:18} {o['tokens']:6d} {o['compile_ms']:7.2f}ms {o['mask_us_p50']:7.1f}us "
                  f"{o['mask_us_p99']:7.1f}us {o['mask_us_max']:7.1f}us  {'yes' if ok else 'NO'}")
        if compiles:
            print(f"{vname:12} {'SUMMARY':18} compile median {statistics.median(compiles):.2f}ms max {max(compiles):.2f}ms | "
                  f"mask p50 median {statistics.median(p50s):.1f}us | per-case p99 median {statistics.median(p99s):.1f}us "
                  f"max {max(p99s):.1f}us (json max {max(json_p99) if json_p99 else 0:.1f}us)")
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
