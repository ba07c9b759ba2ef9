#!/usr/bin/env python3
"""Checks the labels of the held-out corpus heldout_schemas.json with an
independent validator (python3-jsonschema, format checks on): each entry's
"valid" instance must validate and its "invalid" one must not.
Run: python3 src/grammar/testdata/check_heldout.py"""
import json, os, sys
import jsonschema

VALIDATORS = {4: jsonschema.Draft4Validator, 6: jsonschema.Draft6Validator,
              7: jsonschema.Draft7Validator, 2019: jsonschema.Draft201909Validator}

# python3-jsonschema checks "date-time" and "time" only with the
# rfc3339-validator module; without it (not packaged everywhere) they would
# pass anything, so RFC 3339 section 5.6 is checked here instead.
try:
    import rfc3339_validator  # noqa: F401
except ImportError:
    import datetime, re
    _TIME = re.compile(r"^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([zZ]|[+-]([01]\d|2[0-3]):[0-5]\d)$")

    def _time(s):
        return not isinstance(s, str) or _TIME.match(s) is not None

    def _date_time(s):
        if not isinstance(s, str):
            return True
        m = re.match(r"^(\d{4})-(\d{2})-(\d{2})[tT](.*)$", s)
        if not m or not _time(m.group(4)):
            return False
        try:
            datetime.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return False
        return True

    for cls in (jsonschema.Draft4Validator, jsonschema.Draft6Validator, jsonschema.Draft7Validator,
                jsonschema.Draft201909Validator, jsonschema.Draft202012Validator):
        cls.FORMAT_CHECKER.checks("date-time")(_date_time)
        cls.FORMAT_CHECKER.checks("time")(_time)

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
