#!/usr/bin/env python3
"""batch_seeds.py DIR: writes seed scripts for fuzz_batch (tests/fuzz/fuzz_batch.c, whose top
comment is the format) — well-formed captures of the shapes batched capture sees, built from
PROBES.md's record layouts, so the fuzzer starts deep in the decoder: a registration batch, polls,
wakes, waker clones and drops, spawns with their strings, waits and locks inside polls, parks,
task names, open polls in a head, TSC stamps with clock pairs, a buffer read in place and then
flushed, a thread that vanished, a cutoff."""
import os
import struct
import sys

HEAD = struct.Struct("<IHHIIQIBBBBQQQQ10QQ")  # struct tet_batch_head up to open[]
OPEN_MAX = 8
HEAD_BYTES = HEAD.size + OPEN_MAX * 24
MAGIC, VERSION = None, None
POLL, WAKE, CLONE, DROP, SPAWN, TERM, PARK, UNPARK, STRING, WAIT, META, LOCK = range(1, 13)


def events_h(name):
    import re
    src = open(os.path.join(os.path.dirname(__file__), "../../bpf/events.h")).read()
    m = re.search(r"#define\s+%s\s+(0x[0-9a-fA-F]+|\d+)" % name, src)
    return int(m.group(1), 0)


def w0(kind, code, payload):
    return (payload & ((1 << 56) - 1)) | kind << 56 | code << 60


def head(seq, flush, window, clock=2, depth=0, opens=(), reason=1, length=0, tid=0):
    h = HEAD.pack(MAGIC, VERSION, HEAD_BYTES, 32768, tid, seq, length, clock, reason, depth, OPEN_MAX,
                  flush, flush, window, flush, *([0] * 10), 1)
    o = b"".join(struct.pack("<QQQ", a, b, 0) for a, b in opens)
    return h + o + b"\0" * (HEAD_BYTES - len(h) - len(o))


def batch(thread, recs, seq=0, flush=0, window=0, flags=0, **kw):
    data = b"".join(struct.pack("<Q", w) for w in recs)
    return (bytes([1, thread, flags]) + head(seq, flush, window, **kw) +
            struct.pack("<H", len(data)) + data)


def op_u64(op, v):
    return bytes([op]) + struct.pack("<Q", v)


def text(s):
    b = s.encode()
    b += b"\0" * (-len(b) % 8)
    return [int.from_bytes(b[i:i + 8], "little") for i in range(0, len(b), 8)]


def main():
    global MAGIC, VERSION
    MAGIC, VERSION = events_h("TET_BATCH_MAGIC"), events_h("TET_BATCH_VERSION")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    file = "src/main.rs"
    spawn = [w0(SPAWN, 0, 7), 0x5000, 2500, 0x9000, len(file) | 12 << 32, 0xa000, 9 | 5 << 32]
    strs = [w0(STRING, 0, len(file)), 0x9000] + text(file) + [w0(STRING, 0, 9), 0xa000] + text("main::run")
    seeds["polls"] = (op_u64(5, 1000) + batch(1, [], reason=0) +
                      batch(1, strs + spawn + [w0(POLL, 0, 7), 3000, 4000, 0 | (2 << 32),
                                               w0(WAKE, 0, 7), 4500, w0(CLONE, 0, 7), w0(DROP, 0, 7),
                                               w0(POLL, 1, 7), 5000, 6000, 0,
                                               w0(TERM, 0, 7), 0x5000, 6100],
                            seq=1, flush=9000, window=2000) + op_u64(2, 10 ** 9))
    seeds["waits"] = (batch(1, [], reason=0) +
                      batch(1, [w0(WAIT, 3, 8), 0x7000, 1, w0(LOCK, 0, 8), 0x7100, 1,
                                w0(POLL, 0, 8), 3000, 4000, 1, w0(PARK, 0, 1), 4100, 10 ** 6,
                                w0(UNPARK, 0, 1), 5100, 10 ** 6,
                                w0(LOCK, 4, 9), 0x7100, 1, w0(POLL, 0, 9), 5200, 5300, 1],
                            seq=1, flush=9000, window=2000) +
                      batch(2, [w0(META, 0, 8), 1024, 5] + text("named"), seq=0, flush=9100,
                            window=2000) + op_u64(2, 10 ** 9))
    seeds["tsc"] = (bytes([0]) + struct.pack("<QQ", 3 * 10 ** 6, 10 ** 6) +
                    bytes([0]) + struct.pack("<QQ", 6 * 10 ** 6, 2 * 10 ** 6) +
                    batch(3, [w0(POLL, 0, 4), 4500000, 7500000, 0], clock=1, flush=9 * 10 ** 6,
                          window=3 * 10 ** 6, opens=[(5, 4000000)], depth=1) + op_u64(2, 10 ** 9))
    # a buffer read in place (op 6 writes the head and records), then flushed; then it vanishes
    recs = b"".join(struct.pack("<Q", w) for w in [w0(POLL, 0, 5), 2500, 2600, 0])
    mem = head(1, 0, 2000, depth=1, opens=[(6, 2700)], length=len(recs), tid=1) + recs
    seeds["sweep"] = (batch(0, [], reason=0) + bytes([6, 0]) + struct.pack("<HH", 0, len(mem)) + mem +
                      op_u64(3, 10 ** 8) + op_u64(2, 10 ** 8) +
                      batch(0, [w0(POLL, 0, 5), 2500, 2600, 0, w0(POLL, 0, 6), 2700, 2800, 0],
                            seq=1, flush=10 ** 8 + 100, window=2000) +
                      bytes([8, 0]) + op_u64(3, 2 * 10 ** 8) + op_u64(2, 2 * 10 ** 8))
    seeds["cutoff"] = (batch(1, [], reason=0) + op_u64(4, 5000) +
                       batch(1, [w0(POLL, 0, 3), 3000, 4000, 0, w0(POLL, 0, 3), 6000, 7000, 0],
                             seq=1, flush=8000, window=2000, reason=6) + op_u64(7, 9000))
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
