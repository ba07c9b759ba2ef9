#!/usr/bin/env python3
"""Checks the labels in json_schema_cases.json with an independent validator
(python3-jsonschema): every "valid" instance must validate and every
"invalid" one must not. Run: python3 src/grammar/testdata/check_cases.py"""
import json, os, sys
import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
# Draft-04 cases live apart: the sampling test in compiler_test.cc checks
# json_schema_cases.json with the 2020-12 / draft-07 validators only.
cases = []
for name in ("json_schema_cases.json", "json_schema_draft4_cases.json"):
    cases += json.load(open(os.path.join(here, name)))
bad = 0
for case in cases:
    cls = {4: jsonschema.Draft4Validator, 7: jsonschema.Draft7Validator}.get(case.get("draft"), jsonschema.Draft202012Validator)
    v = cls(case["schema"], format_checker=cls.FORMAT_CHECKER)
    for inst in case.get("valid", []):
        if not v.is_valid(inst):
            bad += 1; print("valid-labelled instance fails:", case["name"], json.dumps(inst))
    for inst in case.get("invalid", []):
        if v.is_valid(inst):
            bad += 1; print("invalid-labelled instance validates:", case["name"], json.dumps(inst))
print(f"{len(cases)} cases, {bad} mislabelled")
sys.exit(1 if bad else 0)
