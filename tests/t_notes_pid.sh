#!/bin/bash
# Intent: `list -p PID` / `check -p PID` walk a live process: the PIE executable and a shared
# library carrying notes are found with their load bias (checked against /proc/PID/maps and
# against the bytes at runtime_address in /proc/PID/mem, which must be the site's nop), a
# library deleted on disk after being mapped is still read (through map_files), and
# `check -p` sees Tokio probes that live in a shared library.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
need_fixtures ops_O2 tokio_host libtokioprobes.so
need_root

start() {  # start PROG: runs PROG sleep, waits for "ready", sets $P
    "$@" sleep > "$TMPD/ready.$$" & P=$!; track_pid $P
    for i in $(seq 50); do [ -s "$TMPD/ready.$$" ] && break; sleep 0.1; done
    rm -f "$TMPD/ready.$$"
}
# mem_ok PID JSON: every note's runtime_address holds the nop of its site kind
mem_ok() {
    python3 - "$1" "$2" <<'PY'
import json, sys
pid, notes = sys.argv[1], json.load(open(sys.argv[2]))
bad = 0
with open(f"/proc/{pid}/mem", "rb") as m:
    for n in notes:
        m.seek(n["runtime_address"]); b = m.read(5)
        ok = b[:1] == b"\x90" if n["site"] == "nop1" else b == b"\x0f\x1f\x44\x00\x00"
        bad += not ok
print(len(notes), bad)
PY
}

start "$FX/ops_O2"
"$TRACER" list -p $P --json > "$TMPD/j" || not_ok "list -p failed"
exe=$(readlink -f "$FX/ops_O2")
check_eq "PIE executable found with its notes" 11 "$(jq --arg p "$exe" '[.[] | select(.path==$p)] | length' "$TMPD/j")"
first=$(awk -v p="$exe" '$6==p {split($1,a,"-"); print a[1]; exit}' /proc/$P/maps)
check_eq "load bias = first mapping of the PIE" "$((16#$first))" \
    "$(jq --arg p "$exe" '[.[] | select(.path==$p)][0].load_bias' "$TMPD/j")"
check_eq "runtime_address = address + load_bias" true \
    "$(jq '[.[] | .runtime_address == .address + .load_bias] | all' "$TMPD/j")"
r=$(mem_ok $P "$TMPD/j"); set -- $r
check "sites in /proc/PID/mem are the nops ($r)" test "$1" -gt 0 -a "$2" = 0
rc=$(run_tet "$TMPD/o" "$TMPD/e" list -p $P 'opsema:*')
check "human list -p with a filter shows only opsema" bash -c "grep -q 'opsema' '$TMPD/o' && ! grep -q ' ops  ' '$TMPD/o'"

# Tokio probes in a shared library, deleted on disk after it was mapped
mkdir "$TMPD/lib"; cp "$FX/tokio_host" "$FX/libtokioprobes.so" "$TMPD/lib/"
start "$TMPD/lib/tokio_host"
rm "$TMPD/lib/libtokioprobes.so"
grep -q 'libtokioprobes.so (deleted)' /proc/$P/maps || not_ok "library not shown deleted in maps"
"$TRACER" list -p $P --json > "$TMPD/j"; rc=$?
check_eq "list -p with a deleted library: exit 0" 0 "$rc"
check_eq "deleted library: 10 tokio notes, deleted=true, read via map_files" "10 true true" \
    "$(jq -r '[.[] | select(.provider=="tokio")] | "\(length) \(.[0].deleted) \(.[0].open_path | test("/map_files/"))"' "$TMPD/j")"
libstart=$(awk '/libtokioprobes.so/ {split($1,a,"-"); print a[1]; exit}' /proc/$P/maps)
check_eq "library load bias = its first mapping" "$((16#$libstart))" \
    "$(jq '[.[] | select(.provider=="tokio")][0].load_bias' "$TMPD/j")"
r=$(mem_ok $P <(jq '[.[] | select(.provider=="tokio")]' "$TMPD/j")); set -- $r
check "library sites in /proc/PID/mem are nop5 ($r)" test "$1" = 10 -a "$2" = 0
rc=$(run_tet "$TMPD/j" "$TMPD/e" check -p $P --json)
check_eq "check -p: ready through the library (exit 0)" 0 "$rc"
check_eq "check -p: dialect" tokio-ebpf-trace "$(jq -r .tokio.dialect "$TMPD/j")"
finish
