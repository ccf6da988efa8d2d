#!/usr/bin/env python3
"""peak_rss.py OUT CMD...: runs CMD, forwards SIGINT and SIGTERM to it, and when it has exited
writes its peak resident set (the kernel's ru_maxrss of the waited-for child, in KiB) and its
wall time to OUT as "maxrss_kib=N seconds=S"; exits with CMD's status (128+N for a signal)."""
import os, resource, signal, subprocess, sys, time

out, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
p = subprocess.Popen(cmd)
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda sig, _f: p.send_signal(sig))
while True:
    try:
        rc = p.wait()
        break
    except InterruptedError:
        continue
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    f.write("maxrss_kib=%d seconds=%.1f\n" % (ru.ru_maxrss, time.monotonic() - t0))
sys.exit(rc if rc >= 0 else 128 - rc)
