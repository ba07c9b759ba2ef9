#!/usr/bin/python3
"""Writes damaged copies of a GGUF (and an HF directory) for tests/cli_test.sh. Standard library only.

Usage: cli_make_corrupt.py SRC.gguf HF_SRC_DIR OUT_DIR
Writes OUT_DIR/<case>.gguf for each GGUF case below and OUT_DIR/hf_<case>/ for each HF case, and prints
one case name per line ("gguf <name> <path>" / "hf <name> <path>").

GGUF layout (v2/v3, little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv; n_kv x (string key,
u32 type, value); n_tensors x (string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset);
padding to general.alignment (32); tensor data. A string is u64 length + bytes; an array is u32 element
type + u64 count + elements.
"""

import json
import os
import shutil
import struct
import sys

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9


def parse(blob):
    """Returns offsets of interesting fields: a dict of name -> byte offset."""
    off = {}
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", blob, 8)

    def skip_value(t, pos):
        if t in SCALAR:
            return pos + SCALAR[t]
        if t == STRING:
            (n,) = struct.unpack_from("<Q", blob, pos)
            return pos + 8 + n
        if t == ARRAY:
            et, n = struct.unpack_from("<IQ", blob, pos)
            if "array_count" not in off:
                off["array_count"] = pos + 4
            pos += 12
            for _ in range(n):
                pos = skip_value(et, pos)
            return pos
        raise ValueError("unknown type %d" % t)

    for k in range(n_kv):
        if k == 0:
            off["first_key_len"] = pos
        (klen,) = struct.unpack_from("<Q", blob, pos)
        pos += 8 + klen
        (t,) = struct.unpack_from("<I", blob, pos)
        if k == 0:
            off["first_value_type"] = pos
        if t == STRING and "string_value_len" not in off:
            off["string_value_len"] = pos + 4
        pos = skip_value(t, pos + 4)
    off["tensor_info"] = pos
    (nlen,) = struct.unpack_from("<Q", blob, pos)
    pos += 8 + nlen
    off["tensor_ndims"] = pos
    (nd,) = struct.unpack_from("<I", blob, pos)
    off["tensor_dim0"] = pos + 4
    pos += 4 + 8 * nd
    off["tensor_type"] = pos
    off["tensor_offset"] = pos + 4
    return off


def patch(blob, at, fmt, value):
    b = bytearray(blob)
    struct.pack_into(fmt, b, at, value)
    return bytes(b)


def main():
    src, hf_src, out = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    blob = open(src, "rb").read()
    o = parse(blob)
    dim0 = struct.unpack_from("<Q", blob, o["tensor_dim0"])[0]
    cases = {
        "bad_magic": b"GGUX" + blob[4:],
        "bad_version": patch(blob, 4, "<I", 99),
        "huge_tensor_count": patch(blob, 8, "<Q", 1 << 62),
        "huge_kv_count": patch(blob, 16, "<Q", 1 << 62),
        "huge_key_len": patch(blob, o["first_key_len"], "<Q", 1 << 62),
        "bad_value_type": patch(blob, o["first_value_type"], "<I", 99),
        "huge_string_len": patch(blob, o["string_value_len"], "<Q", (1 << 64) - 16),
        "huge_array_len": patch(blob, o["array_count"], "<Q", 1 << 61),
        "tensor_ndims_99": patch(blob, o["tensor_ndims"], "<I", 99),
        "tensor_huge_dim": patch(blob, o["tensor_dim0"], "<Q", 1 << 40),
        "tensor_wrong_dim": patch(blob, o["tensor_dim0"], "<Q", dim0 - 1),
        "tensor_bad_type": patch(blob, o["tensor_type"], "<I", 999),
        "tensor_offset_oob": patch(blob, o["tensor_offset"], "<Q", 1 << 40),
        "tensor_offset_unaligned": patch(blob, o["tensor_offset"], "<Q",
                                         struct.unpack_from("<Q", blob, o["tensor_offset"])[0] + 1),
    }
    # Truncations: inside the fixed header, inside the kv section, inside tensor infos, inside the data.
    for n in (3, 16, 23, 40, o["tensor_info"] + 5, len(blob) // 2, len(blob) - 1):
        cases["truncated_%d" % n] = blob[:n]
    cases["intact"] = blob  # positive control: must load
    for name, data in cases.items():
        p = os.path.join(out, name + ".gguf")
        with open(p, "wb") as f:
            f.write(data)
        print("gguf %s %s" % (name, p))

    # HF directory cases (config.json + model.safetensors copied from HF_SRC_DIR, then damaged).
    st = open(os.path.join(hf_src, "model.safetensors"), "rb").read()
    cfg = open(os.path.join(hf_src, "config.json"), "rb").read()
    (hlen,) = struct.unpack_from("<Q", st, 0)
    header = json.loads(st[8:8 + hlen])
    first = sorted(k for k in header if k != "__metadata__")[0]
    bad_offsets = dict(header)
    bad_offsets[first] = dict(header[first], data_offsets=[0, 1 << 40])
    hb = json.dumps(bad_offsets).encode()
    hf_cases = {
        "config_not_json": (b"{ this is not json", st),
        "config_empty": (b"", st),
        "no_safetensors": (cfg, None),
        "st_truncated_header": (cfg, st[:8 + hlen // 2]),
        "st_huge_header_len": (cfg, struct.pack("<Q", 1 << 62) + st[8:]),
        "st_truncated_data": (cfg, st[:len(st) // 2]),
        "st_offsets_oob": (cfg, struct.pack("<Q", len(hb)) + hb + st[8 + hlen:]),
    }
    for name, (c, s) in hf_cases.items():
        d = os.path.join(out, "hf_" + name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "wb") as f:
            f.write(c)
        if s is not None:
            with open(os.path.join(d, "model.safetensors"), "wb") as f:
                f.write(s)
        for extra in ("tokenizer.json",):
            if os.path.exists(os.path.join(hf_src, extra)):
                shutil.copy(os.path.join(hf_src, extra), d)
        print("hf %s %s" % (name, d))


if __name__ == "__main__":
    main()
