#!/usr/bin/env python3
"""dwarf_poll_types.py BINARY: the future type of every raw::poll instance, from DWARF — an
independent check of tracer/discover/symbols.c (which never reads DWARF).

raw::poll<T, S> is a 5-byte `jmp Harness<T, S>::poll` (or a body of its own); DWARF names the
subprogram at the jump target (or at raw::poll itself) "poll<T, S>", with generic arguments,
even at debuginfo=line-tables-only. Prints "ADDR_HEX TYPE" per instance whose type DWARF
names; addresses shared by several subprograms (merged functions) are printed as "?".
Type names are normalised like tests/t_fallback_types.sh compares them: DWARF's
`{async_fn_env#0}` / `{async_block_env#0}` / `{closure_env#0}` become `{{closure}}`, ", " → ",".
"""
import re
import subprocess
import sys

binary = sys.argv[1]
syms = subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout
polls = [int(l.split()[0], 16) for l in syms.splitlines()
         if re.search(r" _ZN5tokio7runtime4task3raw4poll17h[0-9a-f]{16}E(\.llvm\.[0-9]+)?$", l)]

# subprogram DIEs: offset -> name / origin; concrete ones: low_pc -> [origin offsets]
name_of, origin_of, at_pc = {}, {}, {}
cur, cur_tag = None, None
info = subprocess.Popen(["readelf", "--debug-dump=info", binary], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
die_re = re.compile(r"^ <\d+><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)")
for line in info.stdout:
    m = die_re.match(line)
    if m:
        cur, cur_tag = int(m.group(1), 16), m.group(2)
        continue
    if cur_tag != "DW_TAG_subprogram":
        continue
    if "DW_AT_name" in line:
        name_of[cur] = line.rsplit("): ", 1)[-1].strip() if "): " in line else line.split(":", 1)[1].strip()
    elif "DW_AT_abstract_origin" in line or "DW_AT_specification" in line:
        origin_of[cur] = int(re.search(r"<0x([0-9a-f]+)>", line).group(1), 16)
    elif "DW_AT_low_pc" in line:
        at_pc.setdefault(int(line.split(":")[-1].strip(), 16), []).append(cur)
info.wait()

def resolve(off, depth=0):
    if off in name_of:
        return name_of[off]
    if off in origin_of and depth < 8:
        return resolve(origin_of[off], depth + 1)
    return None

def first_generic(s):
    i = s.find("<")
    if i < 0:
        return None
    depth, j = 0, i + 1
    while j < len(s):
        c = s[j]
        if c in "<([":
            depth += 1
        elif c in ">)]":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        elif c == "-" and s[j + 1:j + 2] == ">":
            j += 1
        j += 1
    return s[i + 1:j]

def norm(t):
    t = re.sub(r"\{(async_fn_env|async_block_env|closure_env)#\d+\}", "{{closure}}", t)
    return t.replace(", ", ",")

def jmp_target(addr):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary,
                          f"--start-address={addr:#x}", f"--stop-address={addr + 5:#x}"],
                         capture_output=True, text=True).stdout
    m = re.search(r"\bjmp\s+([0-9a-f]+)\s", out)
    return int(m.group(1), 16) if m else None

for a in polls:
    names = set()
    for pc in (a, jmp_target(a)):
        for die in at_pc.get(pc, []) if pc is not None else []:
            n = resolve(die)
            if n and n.startswith("poll<"):
                names.add(norm(first_generic(n)))
    if len(names) == 1:
        print(f"{a:x} {names.pop()}")
    elif names:
        print(f"{a:x} ?")
