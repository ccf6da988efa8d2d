#!/usr/bin/env python3
"""hooks.py — put the tokio USDT probes into any Tokio release, from one catalogue of hook points.

A hook point (probes-patch/hooks/*.hooks) is one edit of Tokio's sources — a probe line, a `use`,
a `let` split so a result can be probed — described once, with as many *variants* as Tokio's
internals have had shapes at that place. A variant is located by its anchor: the exact lines it
replaces, together with the unchanged lines around them, which must occur exactly once in the
release's file (no fuzz, no offsets that matter). For each release the tool picks, per hook,
the variant whose anchor is found (the longest if several are), so one change to a variant
reaches every release that has that code shape. A hook whose code a release does not have yet
(a primitive that did not exist) is skipped only by an explicit `skip` variant whose conditions
hold (the file lacks a marker text), with the reason it gives; any other hook without a variant
makes the release unpatchable, and the tool says which hook, in which file, did not fit.

    hooks.py plan SRC                       the variant each hook takes in the Tokio at SRC (a dry run)
    hooks.py apply SRC DEST                 DEST = SRC + the hook edits + src/runtime/task/usdt.rs
    hooks.py diff SRC                       the same as a unified diff (what a patch file would hold)
    hooks.py shape SRC                      one line: the release, whether the kit knows it, the
                                            closest known release (same variants), and the hooks
    hooks.py matrix [--check] DIR...        plan every tokio-V/ under DIR…, write probes-patch/versions
                                            (--check: exit 1 if it would change)
    hooks.py cover                          from probes-patch/versions: a few releases that together
                                            take every variant any release takes (the newest
                                            release among them), one a line, oldest first

Catalogue syntax (one hook after another; '#' lines outside @find…@end are comments):

    hook NAME                       a hook point; NAME is `area.what`
    doc TEXT                        what it instruments (repeatable)
    edit PATH                       a variant: in PATH (relative to the crate root) replace
    @find                             these lines (the anchor, verbatim, whole lines)
    ...
    @replace                          by these
    ...
    @end
    when-has / when-lacks …         after an edit's @end: conditions the edit is tried under (to
                                      tell two shapes apart whose anchors are the same)
    skip REASON                     a variant that leaves the hook out, taken only when no edit
    when-lacks PATH TEXT              variant matched and every condition holds: PATH is missing or
    when-has PATH TEXT                does not contain TEXT / PATH contains TEXT (repeatable, all
                                      must hold; `\n` in TEXT stands for a line break)

Exit status: 0 done; 1 usage or I/O error; 4 the release cannot be patched (one line on stderr
names the hook and the file that did not fit); 5 matrix --check: versions is stale.
"""
import difflib
import hashlib
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CATALOGUE = os.path.join(HERE, "hooks")
MODULE_SRC = os.path.join(HERE, "common", "usdt.rs")
MODULE_DST = "src/runtime/task/usdt.rs"
VERSIONS = os.path.join(HERE, "versions")
EXIT_USAGE, EXIT_UNPATCHABLE, EXIT_STALE = 1, 4, 5
ME = "hooks"


class Unpatchable(Exception):
    pass


class Usage(Exception):
    pass


# ---- the catalogue ---------------------------------------------------------------------------
class Variant:
    def __init__(self, hook, index, kind, where):
        self.hook, self.index, self.kind, self.where = hook, index, kind, where
        self.path = None            # edit: the file
        self.find = []              # edit: anchor lines
        self.replace = []           # edit: replacement lines
        self.reason = ""            # skip
        self.conds = []             # skip: (has?, path, text)

    @property
    def id(self):
        return "%s#%d" % (self.hook.name, self.index)


class Hook:
    def __init__(self, name, where):
        self.name, self.where = name, where
        self.doc = []
        self.variants = []


def load_catalogue(folder=CATALOGUE):
    hooks, names = [], set()
    files = sorted(f for f in os.listdir(folder) if f.endswith(".hooks"))
    if not files:
        raise Usage("%s: no *.hooks files (a broken kit)" % folder)
    for fname in files:
        path = os.path.join(folder, fname)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hook = var = None
        i = 0
        while i < len(lines):
            line = lines[i]
            where = "%s:%d" % (fname, i + 1)
            i += 1
            if not line.strip() or line.startswith("#"):
                continue
            word, _, rest = line.partition(" ")
            rest = rest.strip()
            if word == "hook":
                if not re.fullmatch(r"[a-z0-9_]+(\.[a-z0-9_]+)+", rest):
                    raise Usage("%s: bad hook name %r" % (where, rest))
                if rest in names:
                    raise Usage("%s: hook %s defined twice" % (where, rest))
                names.add(rest)
                hook = Hook(rest, where)
                hooks.append(hook)
                var = None
            elif hook is None:
                raise Usage("%s: %r before any hook" % (where, word))
            elif word == "doc":
                hook.doc.append(rest)
            elif word == "edit":
                var = Variant(hook, len(hook.variants) + 1, "edit", where)
                var.path = rest
                hook.variants.append(var)
                if i >= len(lines) or lines[i] != "@find":
                    raise Usage("%s: edit without @find" % where)
                i += 1
                block, cur = {"find": [], "replace": []}, "find"
                while True:
                    if i >= len(lines):
                        raise Usage("%s: edit without @end" % where)
                    l = lines[i]
                    i += 1
                    if l == "@replace" and cur == "find":
                        cur = "replace"
                    elif l == "@end" and cur == "replace":
                        break
                    elif l in ("@find", "@replace", "@end"):
                        raise Usage("%s: misplaced %s" % (where, l))
                    else:
                        block[cur].append(l)
                var.find, var.replace = block["find"], block["replace"]
                if not var.find:
                    raise Usage("%s: empty anchor" % where)
                if var.find == var.replace:
                    raise Usage("%s: the edit changes nothing" % where)
            elif word == "skip":
                var = Variant(hook, len(hook.variants) + 1, "skip", where)
                var.reason = rest
                hook.variants.append(var)
            elif word in ("when-lacks", "when-has"):
                if var is None:
                    raise Usage("%s: %s outside a variant" % (where, word))
                p, _, text = rest.partition(" ")
                if not text:
                    raise Usage("%s: %s PATH TEXT" % (where, word))
                var.conds.append((word == "when-has", p, text.replace("\\n", "\n")))
            else:
                raise Usage("%s: unknown keyword %r" % (where, word))
    for h in hooks:
        if not any(v.kind == "edit" for v in h.variants):
            raise Usage("%s: hook %s has no edit variant" % (h.where, h.name))
        for v in h.variants:
            if v.kind == "skip" and not v.conds:
                raise Usage("%s: skip variant of %s without a condition" % (v.where, h.name))
    return hooks


# ---- one release -----------------------------------------------------------------------------
def tokio_version(src):
    try:
        with open(os.path.join(src, "Cargo.toml"), encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise Usage("%s: not a Tokio crate (%s)" % (src, e.strerror))
    m = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', text, re.M | re.S)
    v = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    if not m or m.group(1) != "tokio" or not v:
        raise Usage("%s: Cargo.toml is not the tokio crate's" % src)
    return v.group(1)


def vkey(v):
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", v)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


class Tree:
    """The pristine files of one release, read once, as lists of lines."""

    def __init__(self, root):
        self.root, self.cache = root, {}

    def lines(self, rel):
        if rel not in self.cache:
            p = os.path.join(self.root, rel)
            try:
                with open(p, encoding="utf-8") as f:
                    self.cache[rel] = f.read().split("\n")
            except FileNotFoundError:
                self.cache[rel] = None
            except (OSError, UnicodeDecodeError) as e:
                raise Usage("%s: cannot read (%s)" % (p, e))
        return self.cache[rel]


    def contains(self, rel, text):
        lines = self.lines(rel)
        return lines is not None and text in "\n".join(lines)


def find_all(lines, block):
    n, out = len(block), []
    first = block[0]
    for i in range(len(lines) - n + 1):
        if lines[i] == first and lines[i:i + n] == block:
            out.append(i)
    return out


def choose(hook, tree):
    """(variant, start line) for one hook, or raise Unpatchable saying why."""
    found, why = [], []
    for v in hook.variants:
        if v.kind != "edit":
            continue
        if not all(tree.contains(p, text) == has for has, p, text in v.conds):
            why.append("#%d: its conditions do not hold" % v.index)
            continue
        lines = tree.lines(v.path)
        if lines is None:
            why.append("#%d: %s missing" % (v.index, v.path))
            continue
        at = find_all(lines, v.find)
        if len(at) == 1:
            found.append((v, at[0]))
        else:
            why.append("#%d: anchor %s in %s" % (v.index, "not found" if not at else "found %d times" % len(at), v.path))
    if found:
        longest = max(len(v.find) for v, _ in found)
        best = [(v, at) for v, at in found if len(v.find) == longest]
        if len({(v.path, at, tuple(v.replace)) for v, at in best}) > 1:
            raise Unpatchable("hook %s: variants %s all fit; the catalogue must tell them apart"
                              % (hook.name, ", ".join("#%d" % v.index for v, _ in best)))
        return best[0]
    for v in hook.variants:
        if v.kind == "skip" and all(tree.contains(p, text) == has for has, p, text in v.conds):
            return v, None
    raise Unpatchable("hook %s (%s) does not fit: %s" % (hook.name, hook.doc[0] if hook.doc else hook.where,
                                                         "; ".join(why)))


def plan(hooks, src):
    """[(hook, variant, start)] for the release at src; raises Unpatchable."""
    tokio_version(src)          # a Tokio crate at all? (Usage otherwise)
    tree = Tree(src)
    if tree.lines(MODULE_DST) is not None:
        raise Unpatchable("%s already exists: this Tokio is patched already" % MODULE_DST)
    out, errors = [], []
    for h in hooks:
        try:
            out.append((h,) + choose(h, tree))
        except Unpatchable as e:
            errors.append(str(e))
    if errors:
        raise Unpatchable(errors[0] + ("" if len(errors) == 1 else " (and %d more hooks: %s)" % (
            len(errors) - 1, ", ".join(e.split()[1] for e in errors[1:]))))
    # edits of one file must not overlap (anchors are located in the pristine file)
    spans = {}
    for h, v, at in out:
        if v.kind == "edit":
            spans.setdefault(v.path, []).append((at, at + len(v.find), h.name))
    for path, s in spans.items():
        s.sort()
        for a, b in zip(s, s[1:]):
            if b[0] < a[1]:
                raise Unpatchable("hooks %s and %s overlap in %s" % (a[2], b[2], path))
    return tree, out


def edited_files(tree, chosen):
    """{path: new text} for every file the plan changes, plus the module."""
    per = {}
    for h, v, at in chosen:
        if v.kind == "edit":
            per.setdefault(v.path, []).append((at, v))
    out = {}
    for path, edits in per.items():
        lines = list(tree.lines(path))
        for at, v in sorted(edits, key=lambda e: -e[0]):
            lines[at:at + len(v.find)] = v.replace
        out[path] = "\n".join(lines)
    with open(MODULE_SRC, encoding="utf-8") as f:
        out[MODULE_DST] = f.read()
    return out


def apply(hooks, src, dest):
    tree, chosen = plan(hooks, src)
    files = edited_files(tree, chosen)
    if os.path.exists(dest):
        raise Usage("%s: exists already" % dest)
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("target"))
    for rel, text in files.items():
        p = os.path.join(dest, rel)
        with open(p, "w", encoding="utf-8") as f:
            f.write(text)
    # a patched tree cannot stay a cargo directory source as is: its checksums no longer match
    ck = os.path.join(dest, ".cargo-checksum.json")
    if os.path.exists(ck):
        with open(ck, "w") as f:
            f.write('{"package":null,"files":{}}')
    return chosen


def unified(tree, chosen):
    files = edited_files(tree, chosen)
    out = []
    for rel in sorted(files):
        old = tree.lines(rel)
        a = [] if old is None else "\n".join(old).splitlines(True)
        b = files[rel].splitlines(True)
        out.extend(difflib.unified_diff(a, b, "a/" + rel if old is not None else "/dev/null", "b/" + rel, n=3))
    return "".join(out)


# ---- known releases --------------------------------------------------------------------------
def read_versions():
    """{version: (status, signature, {hook: variant index})} from probes-patch/versions (hooks not
    listed in a row's variants= take variant #1)."""
    known = {}
    try:
        with open(VERSIONS, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                parts = line.split()
                choice = {}
                for field in parts[3:]:
                    if field.startswith("variants=") and field != "variants=-":
                        for item in field[len("variants="):].split(","):
                            name, _, idx = item.partition("#")
                            choice[name] = int(idx)
                known[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "", choice)
    except FileNotFoundError:
        pass
    return known


def signature(chosen):
    """A short name of the shape a release has: the variants its hooks take."""
    ids = ",".join(v.id for _, v, _ in chosen)
    return hashlib.sha256(ids.encode()).hexdigest()[:12]


def closest(chosen, known):
    """(release, [hooks that differ]): the verified release whose hooks take the same variants
    (the newest such), else the one with the fewest hooks taking another variant."""
    best = None
    for k, (st, sig, choice) in known.items():
        if st != "ok":
            continue
        differ = [h.name for h, v, _ in chosen if choice.get(h.name, 1) != v.index]
        key = (len(differ), tuple(-x for x in vkey(k)))
        if best is None or key < best[0]:
            best = (key, k, differ)
    return (best[1], best[2]) if best else (None, None)


def cmd_shape(hooks, src):
    version = tokio_version(src)
    known = read_versions()
    try:
        _, chosen = plan(hooks, src)
    except Unpatchable as e:
        print("tokio %s: cannot be patched: %s" % (version, e))
        return EXIT_UNPATCHABLE
    skipped = [h.name for h, v, _ in chosen if v.kind == "skip"]
    near, differ = closest(chosen, known)
    if version in known and known[version][0] == "ok":
        status = "known"
    elif known and vkey(version) < min(vkey(k) for k in known):
        print("tokio %s: older than every release the kit patches (the oldest is %s)" % (
            version, min(known, key=vkey)))
        return EXIT_UNPATCHABLE
    elif known and vkey(version) > max(vkey(k) for k in known):
        status = "newer"
    else:
        status = "unlisted"
    if near and not differ:
        near_text = near
    else:
        near_text = "none; closest by hooks: %s" % (
            "%s (%d hooks take another variant: %s)" % (near, len(differ), ", ".join(differ)) if near
            else "no verified release")
    print("tokio %s: %s; shape %s; %d hooks, %d left out%s; closest known release %s" % (
        version, status, signature(chosen), len(chosen), len(skipped),
        (" (" + ", ".join(skipped) + ")") if skipped else "", near_text))
    return 0


# ---- the matrix ------------------------------------------------------------------------------
def releases(dirs):
    found = {}
    for d in dirs:
        for name in os.listdir(d):
            m = re.fullmatch(r"tokio-(\d+\.\d+\.\d+)", name)
            if m and os.path.isfile(os.path.join(d, name, "Cargo.toml")):
                found.setdefault(m.group(1), os.path.join(d, name))
    return [found[v] for v in sorted(found, key=vkey)]


def cmd_matrix(hooks, dirs, check):
    rows = []
    for src in releases(dirs):
        version = tokio_version(src)
        try:
            _, chosen = plan(hooks, src)
            skipped = [h.name for h, v, _ in chosen if v.kind == "skip"]
            shape = ["%s#%d" % (h.name, v.index) for h, v, _ in chosen if v.index != 1]
            rows.append("%s ok %s skip=%s variants=%s" % (version, signature(chosen),
                        ",".join(skipped) or "-", ",".join(shape) or "-"))
        except Unpatchable as e:
            rows.append("%s unpatchable - %s" % (version, str(e).replace(" ", "_")))
    text = ("# Generated by probes-patch/hooks.py matrix from probes-patch/hooks/*.hooks and the Tokio\n"
            "# sources in ../shared/tokio-src (+ Debian's): do not edit. One release a line:\n"
            "#   VERSION ok SHAPE skip=HOOKS variants=HOOK#N...   (hooks not listed take variant #1)\n"
            "#   VERSION unpatchable - WHY\n" + "\n".join(rows) + "\n")
    old = open(VERSIONS, encoding="utf-8").read() if os.path.exists(VERSIONS) else ""
    bad = [r for r in rows if " unpatchable " in r]
    if check:
        if old != text:
            sys.stderr.write("%s: probes-patch/versions is stale (run probes-patch/hooks.py matrix DIR...)\n" % ME)
            for l in difflib.unified_diff(old.split("\n"), text.split("\n"), "versions", "now", lineterm="", n=0):
                sys.stderr.write(l + "\n")
            return EXIT_STALE
    else:
        with open(VERSIONS, "w", encoding="utf-8") as f:
            f.write(text)
    sys.stderr.write("%s: %d releases, %d patchable, %d not%s\n" % (
        ME, len(rows), len(rows) - len(bad), len(bad), "" if check else " (wrote probes-patch/versions)"))
    return 0


def cmd_cover(hooks):
    """Releases that together take every (hook, variant) some verified release takes: greedy, the
    newest release first, then the one adding most variants not yet taken (the newest at a tie).
    A variant no release takes is named on stderr (a catalogue entry nothing exercises)."""
    known = {v: {"%s#%d" % (h.name, c.get(h.name, 1)) for h in hooks}
             for v, (st, _, c) in read_versions().items() if st == "ok"}
    if not known:
        raise Usage("probes-patch/versions lists no patchable release (hooks.py matrix)")
    taken = set().union(*known.values())
    idle = [v.id for h in hooks for v in h.variants if v.id not in taken]
    if idle:
        sys.stderr.write("%s: %d variants no verified release takes: %s\n" % (ME, len(idle), ", ".join(idle)))
    pick = [max(known, key=vkey)]
    left = taken - known[pick[0]]
    while left:
        best = max(known, key=lambda v: (len(known[v] & left), vkey(v)))
        pick.append(best)
        left -= known[best]
    for v in sorted(pick, key=vkey):
        print(v)
    return 0


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(argv) >= 2 else EXIT_USAGE
    cmd, args = argv[1], argv[2:]
    try:
        hooks = load_catalogue()
        if cmd == "plan" and len(args) == 1:
            _, chosen = plan(hooks, args[0])
            for h, v, at in chosen:
                print("%-40s %s" % (h.name, ("%s:%d" % (v.path, at + 1)) if v.kind == "edit" else "skipped: " + v.reason)
                      if v.index == 1 else "%-40s #%d %s" % (h.name, v.index, ("%s:%d" % (v.path, at + 1)) if v.kind == "edit" else "skipped: " + v.reason))
            return 0
        if cmd == "apply" and len(args) == 2:
            chosen = apply(hooks, args[0], args[1])
            return 0
        if cmd == "diff" and len(args) == 1:
            tree, chosen = plan(hooks, args[0])
            sys.stdout.write(unified(tree, chosen))
            return 0
        if cmd == "shape" and len(args) == 1:
            return cmd_shape(hooks, args[0])
        if cmd == "matrix":
            check = "--check" in args
            dirs = [a for a in args if a != "--check"]
            if not dirs:
                raise Usage("matrix needs the folders holding tokio-V/ sources")
            return cmd_matrix(hooks, dirs, check)
        if cmd == "cover" and not args:
            return cmd_cover(hooks)
        raise Usage("usage: hooks.py plan|apply|diff|shape|matrix|cover … (hooks.py --help)")
    except Unpatchable as e:
        try:
            v = tokio_version(args[0])
        except Usage:
            v = "?"
        sys.stderr.write("%s: tokio %s cannot be patched: %s\n" % (ME, v, e))
        return EXIT_UNPATCHABLE
    except Usage as e:
        sys.stderr.write("%s: %s\n" % (ME, e))
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv))
