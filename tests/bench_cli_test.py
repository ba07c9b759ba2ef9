#!/usr/bin/env python3
"""`deepinfer bench` end to end on a tiny random-weight model.

Checks the output contract, not timings: the JSON has the documented keys with
positive finite values and one decode entry per requested batch size, the
table is printed, the --plot file is a well-formed PNG (signature, IHDR with
the expected geometry and a correct CRC, IEND last), and bad flags fail with
one clear stderr line.

Also `bench --speculative-method mtp` on stories260K-mtp: the JSON has a point per schedule and
concurrency, drafts only where speculating, a calibration per depth, and both PNG charts.

Usage: bench_cli_test.py path/to/deepinfer [SHARED_DIR]
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import zlib


SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")


def fail(msg):
    print("bench_cli_test: FAIL: " + msg)
    sys.exit(1)


def run(cmd, expect_ok=True):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if expect_ok and p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p


def check_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("plot: bad PNG signature")
    length, ctype = struct.unpack(">I4s", data[8:16])
    if ctype != b"IHDR" or length != 13:
        fail("plot: first chunk is not a 13-byte IHDR")
    body = data[16:16 + 13]
    (crc,) = struct.unpack(">I", data[29:33])
    if zlib.crc32(data[12:29]) != crc:
        fail("plot: IHDR CRC mismatch")
    width, height, depth, color = struct.unpack(">IIBB", body[:10])
    if width < 200 or height < 150 or depth != 8 or color != 2:
        fail("plot: unexpected IHDR %dx%d depth %d colour %d" % (width, height, depth, color))
    # Walk the chunks; decompress IDAT and check the size of the raster.
    pos, idat, last = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        ctype = data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(data[pos + 4:pos + 8 + length]) != crc:
            fail("plot: CRC mismatch in chunk %r" % ctype)
        if ctype == b"IDAT":
            idat += chunk
        last = ctype
        pos += 12 + length
    if last != b"IEND":
        fail("plot: IEND is not the last chunk")
    raw = zlib.decompress(idat)
    if len(raw) != height * (1 + 3 * width):
        fail("plot: raster has %d bytes, expected %d" % (len(raw), height * (1 + 3 * width)))
    pixels = set(raw[1 + y * (1 + 3 * width) + 3 * x] for y in range(0, height, 7) for x in range(0, width, 5))
    if len(pixels) < 3:
        fail("plot: the image is blank")


def positive_finite(name, v):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0:
        fail("json: %s = %r is not a positive finite number" % (name, v))


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    di = sys.argv[1]
    global SHARED
    if len(sys.argv) == 3:
        SHARED = sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="di_bench_test.") as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        run([di, "synth", "--arch", "llama", "--preset", "tiny", "--dtype", "q8_0", "--seed", "3", "--out", model])
        js, png = os.path.join(tmp, "bench.json"), os.path.join(tmp, "bench.png")
        p = run([di, "bench", "--model", model, "--prompt-tokens", "40", "--gen-tokens", "6", "--batch", "1,3,5",
                 "--threads", "2", "--rounds", "2", "--prefill-chunk", "16", "--json", js, "--plot", png])
        if "prefill" not in p.stdout or "decode" not in p.stdout:
            fail("the table on stdout lacks prefill/decode lines:\n" + p.stdout)
        r = json.load(open(js))
        for key in ("model", "threads", "prefill_tokens_per_s", "ttft_ms", "decode_tokens_per_s", "peak_rss_bytes"):
            if key not in r:
                fail("json: missing key " + key)
        if r["model"] != model or r["threads"] != 2:
            fail("json: model/threads are %r/%r" % (r["model"], r["threads"]))
        if r.get("kernels") not in ("scalar", "avx2", "avx512", "avx512+amx"):
            fail("json: kernels is %r" % r.get("kernels"))
        if "kernels " + r["kernels"] not in p.stdout:
            fail("the table does not name the kernels (%s):\n%s" % (r["kernels"], p.stdout))
        for key in ("prefill_tokens_per_s", "ttft_ms", "peak_rss_bytes", "weight_bytes", "weight_bytes_per_token",
                    "active_weight_bytes_per_token"):
            positive_finite(key, r[key])
        if sorted(r["decode_tokens_per_s"]) != ["1", "3", "5"]:
            fail("json: decode_tokens_per_s keys are %r" % sorted(r["decode_tokens_per_s"]))
        for b, v in r["decode_tokens_per_s"].items():
            positive_finite("decode_tokens_per_s[%s]" % b, v)
            rounds = r["decode_tokens_per_s_rounds"][b]
            if len(rounds) != 2 or not (min(rounds) <= v <= max(rounds)):
                fail("json: decode rounds %r do not bracket the median %r" % (rounds, v))
        if r["active_weight_bytes_per_token"] > r["weight_bytes_per_token"]:
            fail(f"active bytes exceed the bytes read per token: {r}")
        if r["peak_rss_bytes"] < (1 << 20) or r["weight_bytes_per_token"] > r["weight_bytes"]:
            fail("json: implausible sizes %r" % r)
        # Prefill of 40 tokens: ttft is the time of that one prompt plus the
        # first sample, so never much shorter than the prefill rate implies;
        # on this tiny model fixed costs (thread wake-ups, sampling) can be as
        # large as the prefill itself, hence the wide upper bound, which still
        # catches unit mistakes (s vs ms is 1000x).
        prefill_ms = 40 / r["prefill_tokens_per_s"] * 1e3
        if r["ttft_ms"] < 0.5 * prefill_ms or r["ttft_ms"] > 20 * prefill_ms + 50:
            fail("json: ttft %r ms and prefill %r tok/s disagree" % (r["ttft_ms"], r["prefill_tokens_per_s"]))
        check_png(png)

        # --shared-prompt runs and still reports every batch size.
        js2 = os.path.join(tmp, "shared.json")
        run([di, "bench", "--model", model, "--prompt-tokens", "37", "--gen-tokens", "4", "--batch", "4",
             "--threads", "1", "--shared-prompt", "--json", js2])
        if list(json.load(open(js2))["decode_tokens_per_s"]) != ["4"]:
            fail("shared-prompt json lacks batch 4")

        # --speculative-method: none / fixed / adaptive per concurrency through the engine, the
        # calibration per depth, both charts (the MTP checkpoint with a trained next-n layer).
        mtp = os.path.join(SHARED, "models", "stories260K-mtp")
        js3, png3 = os.path.join(tmp, "spec.json"), os.path.join(tmp, "spec.png")
        p = run([di, "bench", mtp, "--tokenizer", os.path.join(SHARED, "models", "gguf", "stories260K.gguf"),
                 "--prompt", "Once upon a time, there was a little girl", "--gen-tokens", "40", "--batch", "1,4",
                 "--threads", "1", "--speculative-method", "mtp", "--json", js3, "--plot", png3])
        if "calibration" not in p.stdout or "adaptive" not in p.stdout:
            fail("the speculative table lacks its columns or the calibration:\n" + p.stdout)
        spec = json.load(open(js3))["speculative"]
        if spec["method"] != "mtp" or spec["num_speculative_tokens"] != 5:
            fail("speculative json: %r" % spec)
        got = sorted((pt["schedule"], pt["concurrency"]) for pt in spec["points"])
        want = sorted((s, c) for s in ("none", "fixed", "adaptive") for c in (1, 4))
        if got != want:
            fail("speculative json points %r, want %r" % (got, want))
        for pt in spec["points"]:
            positive_finite("median_decode_tokens_per_second", pt["median_decode_tokens_per_second"])
            if pt["schedule"] == "none" and pt["draft_tokens"] != 0:
                fail("speculative json: 'none' verified drafts: %r" % pt)
            if pt["schedule"] == "fixed":
                if not 0 < pt["accepted_tokens"] <= pt["draft_tokens"]:
                    fail("speculative json: fixed accepted %r of %r" % (pt["accepted_tokens"], pt["draft_tokens"]))
                if len(pt["predicted_acceptance"]) != 5 or not all(0 < x <= 1 for x in pt["observed_acceptance"]):
                    fail("speculative json: fixed calibration %r" % pt)
        check_png(png3)
        check_png(os.path.join(tmp, "spec-reliability.png"))
        p = run([di, "bench", mtp, "--speculative-method", "draft"], expect_ok=False)
        if p.returncode == 0 or "--draft-model" not in p.stderr:
            fail("bench --speculative-method draft without --draft-model: rc %d, %r" % (p.returncode, p.stderr))

        # User errors: non-zero exit, one line on stderr.
        for args, needle in (
            (["--batch", "1,0"], "--batch"),
            (["--batch", "2,x"], "--batch"),
            (["--prompt-tokens", "500", "--gen-tokens", "100"], "context length"),
            (["--rounds", "0"], "--rounds"),
            (["--prompt-tokens", "8", "--gen-tokens", "2", "--json", os.path.join(tmp, "no/such/dir.json")],
             "cannot open"),
        ):
            p = run([di, "bench", "--model", model] + args, expect_ok=False)
            lines = [l for l in p.stderr.splitlines() if l.strip()]
            if p.returncode == 0 or len(lines) != 1 or needle not in lines[0]:
                fail("bench %s: rc %d, stderr %r" % (" ".join(args), p.returncode, p.stderr))
    print("bench_cli_test: PASS")


if __name__ == "__main__":
    main()
