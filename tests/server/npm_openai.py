"""The official `openai` npm client, installed once into a cache folder for the server tests.

ctest runs several server tests at once, and each may be the first to need the package: the
install takes a file lock so that concurrent tests wait for one `npm install` instead of writing
the same node_modules together (which left a half-installed package behind), and a stamp file
written after a successful install marks it complete.
"""
import fcntl
import os
import subprocess

PACKAGE = "openai@4"


def ensure_openai(npm_prefix, timeout=300):
    """Installs PACKAGE under npm_prefix unless done; returns None, or npm's error text."""
    os.makedirs(npm_prefix, exist_ok=True)
    stamp = os.path.join(npm_prefix, ".deepinfer-openai-installed")
    with open(os.path.join(npm_prefix, ".deepinfer-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(stamp):
            return None
        r = subprocess.run(["npm", "install", "--silent", "--prefix", npm_prefix, PACKAGE],
                           capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            return "npm install %s failed: %s" % (PACKAGE, r.stderr[-2000:])
        with open(stamp, "w") as f:
            f.write(PACKAGE + "\n")
    return None
