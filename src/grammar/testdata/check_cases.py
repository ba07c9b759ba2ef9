#!/usr/bin/env python3
"""Checks the labels in json_schema_cases.json with an independent validator
(python3-jsonschema): every "valid" instance must validate and every
"invalid" one must not. Run: python3 src/grammar/testdata/check_cases.py"""
import json, os, sys
import jsonschema

here = os.path.dirname(os.path.abspath(__file__))
cases = json.load(open(os.path.join(here, "json_schema_cases.json")))
bad = 0
for case in cases:
    cls = jsonschema.Draft7Validator if case.get("draft") == 7 else jsonschema.Draft202012Validator
    v = cls(case["schema"], format_checker=cls.FORMAT_CHECKER)
    for inst in case.get("valid", []):
        if not v.is_valid(inst):
            bad += 1; print("valid-labelled instance fails:", case["name"], json.dumps(inst))
    for inst in case.get("invalid", []):
        if v.is_valid(inst):
            bad += 1; print("invalid-labelled instance validates:", case["name"], json.dumps(inst))
print(f"{len(cases)} cases, {bad} mislabelled")
sys.exit(1 if bad else 0)
