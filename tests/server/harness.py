"""Shared plumbing of the server tests: pass/fail bookkeeping and a `deepinfer serve` child process."""
import signal
import socket
import subprocess
import threading

failures = []  # what failed, in order; a test exits non-zero when it is not empty


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServeProcess:
    """`deepinfer serve MODEL ARGS --port P --threads 1`, returned once it printed its listening line;
    its stderr is collected in `stderr` (lines)."""

    def __init__(self, di, model, args):
        self.port = free_port()
        self.proc = subprocess.Popen([di, "serve", model, *args, "--port", str(self.port), "--threads", "1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        if not self.proc.stdout.readline().startswith("listening on http://"):
            self.proc.wait(10)
            raise SystemExit("FAIL: server did not start: " + "".join(self.stderr))

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        check(self.proc.wait(30) == 0, "server exits 0 on SIGTERM")
