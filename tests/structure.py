#!/usr/bin/env python3
"""structure.py ROOT: the tracer's structure rules (issue 26), as numbers a test checks.

Prints one line per rule: "longest N FILE FUNC", "symbol_circles [...]", "include_circles [...]".
- a function's length: from its opening line "{" to its closing "}" at column 0 (the house
  style: a function's braces stand alone at column 0);
- symbol circles: file A uses a symbol file B defines (nm of build/obj/A.o: U; B.o: T/D/B/R)
  and back, through any path;
- include circles: x.c with x.h as one unit; A includes a header of B and back.
"""
import collections, glob, os, re, subprocess, sys

root = sys.argv[1]
srcs = sorted(glob.glob(root + '/tracer/*/*.c'))
units = {os.path.basename(f)[:-2]: f for f in srcs}

longest = (0, '', '')
for f in srcs:
    lines = open(f).read().split('\n')
    i = 0
    while i < len(lines):
        if lines[i] == '{' and i > 0:
            k = i + 1
            while k < len(lines) and lines[k] != '}':
                k += 1
            m = re.search(r'(\w+)\s*\(', lines[i - 1]) or re.search(r'(\w+)\s*\(', lines[i - 2])
            n = k - i + 1
            if n > longest[0]:
                longest = (n, f[len(root) + 1:], m.group(1) if m else '?')
            i = k
        i += 1
print('longest %d %s %s' % longest)

defs, undef = {}, collections.defaultdict(set)
for u in units:
    o = '%s/build/obj/%s.o' % (root, u)
    if not os.path.exists(o):
        sys.exit('structure.py: %s missing (make)' % o)
    for l in subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout.split('\n'):
        p = l.split()
        if len(p) == 3 and p[1] in 'TDBR':
            defs[p[2]] = u
        elif len(p) == 2 and p[0] == 'U':
            undef[u].add(p[1])
sym = collections.defaultdict(set)
for u, ss in undef.items():
    for s in ss:
        if s in defs and defs[s] != u:
            sym[u].add(defs[s])
hdr = {os.path.basename(h): h for h in glob.glob(root + '/tracer/*/*.h')}
inc = collections.defaultdict(set)
for u, f in units.items():
    for ff in [f] + ([hdr[u + '.h']] if u + '.h' in hdr else []):
        for m in re.findall(r'#include "([^"]+)\.h"', open(ff).read()):
            if m != u and m in units:
                inc[u].add(m)

def circles(g):
    idx, low, st, on, out = {}, {}, [], set(), []
    def visit(v):
        idx[v] = low[v] = len(idx)
        st.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in idx:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in idx:
            visit(v)
    return sorted(out)

print('symbol_circles', circles(sym))
print('include_circles', circles(inc))

# the arrows between folders: folder A uses a symbol folder B defines, or includes a header of it
folder = {u: os.path.basename(os.path.dirname(f)) for u, f in units.items()}
for h, p in hdr.items():
    folder.setdefault(h[:-2], os.path.basename(os.path.dirname(p)))
arrows = set()
for g in (sym, inc):
    for a, bs in g.items():
        for b in bs:
            if folder[a] != folder[b]:
                arrows.add('%s->%s' % (folder[a], folder[b]))
for u, f in units.items():  # headers alone (data, inline): a unit including another folder's
    for m in re.findall(r'#include "([^"]+)\.h"', open(f).read()):
        if m + '.h' in hdr and folder.get(m) and folder[m] != folder[u]:
            arrows.add('%s->%s' % (folder[u], folder[m]))
print('folder_arrows', ' '.join(sorted(arrows)))
