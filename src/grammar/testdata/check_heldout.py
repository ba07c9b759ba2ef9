#!/usr/bin/env python3
"""Checks the labels of the held-out corpus heldout_schemas.json with an
independent validator (python3-jsonschema, format checks on): each entry's
"valid" instance must validate and its "invalid" one must not.
Run: python3 src/grammar/testdata/check_heldout.py"""
import json, os, sys
import jsonschema

VALIDATORS = {4: jsonschema.Draft4Validator, 6: jsonschema.Draft6Validator,
              7: jsonschema.Draft7Validator, 2019: jsonschema.Draft201909Validator}

here = os.path.dirname(os.path.abspath(__file__))
corpus = json.load(open(os.path.join(here, "heldout_schemas.json")))
bad = 0
names = set()
for entry in corpus:
    if entry["name"] in names:
        bad += 1; print("duplicate name:", entry["name"])
    names.add(entry["name"])
    cls = VALIDATORS.get(entry.get("draft"), jsonschema.Draft202012Validator)
    v = cls(entry["schema"], format_checker=cls.FORMAT_CHECKER)
    if not v.is_valid(entry["valid"]):
        bad += 1; print("valid-labelled instance fails:", entry["name"], json.dumps(entry["valid"]))
    if v.is_valid(entry["invalid"]):
        bad += 1; print("invalid-labelled instance validates:", entry["name"], json.dumps(entry["invalid"]))
print(f"{len(corpus)} schemas, {bad} mislabelled")
sys.exit(1 if bad else 0)
