# The kit's release matrix (tests/t_kit_matrix.sh, `make kit-matrix`): for a Tokio release V with a
# source in ../shared/tokio-src (or Debian's), the matrix workload (tests/fixtures/kit/matrix-app)
# built three ways from a registry of that release (tests/kit/registry.sh):
#   usdt   by the kit (scripts/tokio-usdt-build --release): the probes in, the kit's own check
#   nocfg  against the kit's patched Tokio without --cfg tokio_task_tracking
#   stock  against the same Tokio unpatched
# nocfg and stock are built from ONE source directory (the tree copied in before each build) in
# one target directory, as t_kit_notes does: a path source's directory reaches the code (panic
# locations, symbol hashes), so only then must they be the same functions with the same sizes.
# Builds are kept by content hash (the release's sources, the catalogue, the kit, the workload,
# rustc) under .cache/kit-matrix: a rerun with nothing changed builds nothing. Every release is
# built from ONE registry path ($KM/registry, km_shared_registry), so the target directories
# shared by all releases keep the dependencies (libc, syn, mio, …) compiled once.
# Source after tests/lib.sh.
KM=${KIT_MATRIX_DIR:-$ROOT/.cache/kit-matrix}
KM_BUILD_REV=2   # bump when km_build makes its builds another way (part of the cache key)

# km_releases cover|latest|all: the releases of the matrix (cover: a few that together take every
# variant of every hook any release takes, hooks.py cover; latest: the newest of each minor line)
km_releases() {
    local all
    all=$("$ROOT/tests/kit/registry.sh" --list) || return 1
    if [ "$1" = all ]; then echo "$all"; return; fi
    if [ "$1" = cover ]; then python3 "$ROOT/probes-patch/hooks.py" cover; return; fi
    awk -F. '{ last[$1 "." $2] = $0; if (!seen[$1 "." $2]++) order[++n] = $1 "." $2 }
             END { for (i = 1; i <= n; i++) print last[order[i]] }' <<< "$all"
}

# km_compared MODE RELEASE…: of a run's releases (sorted), those also built without the cfg and
# unpatched and compared with nm: make test (MODE test) the newest (t_kit_notes compares the
# other Debian lines' releases, 1.24.2 and 1.43.1: ~35 s a release, and CI runs near its 45
# minutes); KIT_MATRIX=cover|latest|all every one (the cover's other hook variants:
# `KIT_MATRIX=cover make kit-matrix`). t_kit_notes leaves these to the matrix.
km_compared() {
    local mode=$1; shift
    if [ "$mode" = test ]; then printf '%s\n' "${@: -1}"
    else printf '%s\n' "$@"; fi
}

# "name size" of every function in .text, hashes stripped, sorted (nm: an observer we did not write)
km_func_sizes() {
    nm -C -S --defined-only "$1" | awk '$3 ~ /^[tTwW]$/ { sz = $2; $1 = ""; $2 = ""; $3 = ""; print $0, sz }' |
        sed 's/::h[0-9a-f]\{16\}//' | LC_ALL=C sort
}
km_text_size() {
    local h
    h=$(readelf -S --wide "$1" | awk '$2 == ".text" { print $6 }')
    [ -n "$h" ] && echo $((16#$h))
}

# km_make_app DIR V REGISTRY: the matrix workload as a crate in DIR (made anew) depending on
# tokio =V, whose .cargo/config.toml takes crates from REGISTRY (a directory source)
km_make_app() {
    local app=$1 v=$2 reg=$3
    rm -rf "$app" && mkdir -p "$app/src" "$app/.cargo"
    cp "$ROOT/tests/fixtures/kit/matrix-app/src/main.rs" "$app/src/"
    printf '[package]\nname = "matrix-app"\nversion = "0.1.0"\nedition = "2021"\n[dependencies]\ntokio = { version = "=%s", features = ["full"] }\n' "$v" > "$app/Cargo.toml"
    printf '[source.crates-io]\nreplace-with = "matrix"\n[source.matrix]\ndirectory = "%s"\n[net]\noffline = true\n' "$reg" > "$app/.cargo/config.toml"
}

# km_shared_registry V: $KM/registry made anew as the crates of $KM/V/registry (registry.sh), each
# named by its crate and the folder it comes from (name-version~hash of the path). Cargo takes a
# registry crate's path into its fingerprint (PathToSourceChanged): from $KM/V/registry every
# release rebuilt all its dependencies in the shared target directories (20 of the ~24 crates);
# from one path they stay fresh across releases, and a name-version that two releases take from
# two folders (bookworm's, sid's) is two paths, never one build taken for the other.
km_shared_registry() {
    python3 - "$KM/$1/registry" "$KM/registry" <<'PY'
import hashlib, os, shutil, sys
src, reg = sys.argv[1:]
shutil.rmtree(reg, ignore_errors=True)
os.makedirs(reg)
for e in sorted(os.listdir(src)):
    t = os.path.realpath(os.path.join(src, e))
    os.symlink(t, os.path.join(reg, e + "~" + hashlib.sha256(t.encode()).hexdigest()[:8]))
PY
}

# km_key SRC: the content hash a release's builds are kept by: its sources, the catalogue, the
# kit, the workload, the way they are built (KM_BUILD_REV) and rustc
km_key() {
    { (cd "$1" && find . -type f ! -name .cargo-checksum.json -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
             cat "$ROOT"/probes-patch/hooks.py "$ROOT"/probes-patch/hooks/*.hooks "$ROOT"/probes-patch/common/usdt.rs \
                 "$ROOT/scripts/tokio-usdt-build" "$ROOT/tests/fixtures/kit/matrix-app/src/main.rs"
             echo "$KM_BUILD_REV"; rustc -vV; } | sha256sum | cut -c1-32
}

# km_build V [usdt]: makes $KM/V/bin/{usdt,nocfg,stock} (usdt: the kit's build alone) or keeps
# them; sets KW; returns 1 with the reason in $KM_ERR when a build failed. The kit's stderr is
# kept in $KW/kit.err and its exit status in $KW/kit.rc.
km_build() {
    local v=$1 only=${2:-} key src f
    KW=$KM/$v KM_ERR=""
    mkdir -p "$KW/bin"
    "$ROOT/tests/kit/registry.sh" "$v" "$KW/registry" || { KM_ERR="no registry for tokio $v"; return 1; }
    src=$(readlink -f "$KW/registry/tokio-$v")
    key=$(km_key "$src")
    KM_CACHED=1
    for f in usdt ${only:-nocfg stock}; do [ -x "$KW/bin/$f" ] || KM_CACHED=0; done
    [ "$(cat "$KW/built-from" 2>/dev/null)" = "$key" ] || KM_CACHED=0
    [ $KM_CACHED = 1 ] && return 0
    rm -f "$KW/built-from" "$KW"/bin/*
    local app=$KW/app
    km_shared_registry "$v" || { KM_ERR="cannot make $KM/registry from $KW/registry"; return 1; }
    km_make_app "$app" "$v" "$KM/registry"
    # usdt: the kit, as a user runs it in the crate
    (cd "$app" && "$ROOT/scripts/tokio-usdt-build" --release --target-dir "$KM/target-usdt") > "$KW/kit.out" 2> "$KW/kit.err"
    echo $? > "$KW/kit.rc"
    [ "$(cat "$KW/kit.rc")" = 0 ] || { KM_ERR="the kit failed (exit $(cat "$KW/kit.rc")): $(grep -m1 'tokio-usdt-build:' "$KW/kit.err" | tail -c 300)"; return 1; }
    cp "$KM/target-usdt/release/matrix-app" "$KW/bin/usdt"
    [ -n "$only" ] && { echo "$key" > "$KW/built-from"; return 0; }
    # nocfg, stock: one directory, one target directory, fresh mtimes before each build
    local patched=$KM/target-usdt/tokio-usdt/tokio-$v from
    for f in nocfg stock; do
        if [ $f = nocfg ]; then from=$patched; else from=$src; fi
        rm -rf "$KM/src/tokio" && mkdir -p "$KM/src/tokio" && cp -r "$from/." "$KM/src/tokio/"
        rm -f "$KM/src/tokio/.tokio-usdt-stamp"
        if ! (cd "$app" && env -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS RUSTFLAGS="-C force-frame-pointers=yes" \
                cargo --config "patch.crates-io.tokio.path=\"$KM/src/tokio\"" build --release --quiet \
                --target-dir "$KM/target-nocfg") > "$KW/$f.log" 2>&1; then
            KM_ERR="the $f build failed: $(grep -m1 '^error' "$KW/$f.log")"
            return 1
        fi
        cp "$KM/target-nocfg/release/matrix-app" "$KW/bin/$f"
    done
    echo "$key" > "$KW/built-from"
}

# km_check_builds V [usdt]: the checks of the three builds (after km_build; usdt: of the kit's)
km_check_builds() {
    local v=$1 only=${2:-} u=$KW/bin/usdt names want badsites badargs n c
    check "tokio $v: the kit says the binary carries all ${#PROBE_ARGC[@]} probes" \
        grep -q "matrix-app: carries all ${#PROBE_ARGC[@]} tokio probes" "$KW/kit.err"
    tokio_notes "$u" > "$KW/notes"
    names=$(cut -d' ' -f1 "$KW/notes" | sort -u | tr '\n' ' ')
    want=$(printf '%s\n' "${!PROBE_ARGC[@]}" | sort | tr '\n' ' ')
    check_eq "tokio $v usdt: readelf -n lists exactly the documented probes" "$want" "$names"
    badsites="" badargs=""
    for n in "${!PROBE_ARGC[@]}"; do
        c=$(awk -v n="$n" '$1 == n' "$KW/notes" | wc -l)
        [ "$c" = "${PROBE_SITES[$n]:-1}" ] || badsites+="$n:$c "
    done
    while read -r n c; do [ "${PROBE_ARGC[$n]:-x}" = "$c" ] || badargs+="$n:$c "; done < "$KW/notes"
    check_eq "tokio $v usdt: sites per probe and argument counts as documented" "" "$badsites$badargs"
    local so uo
    uo=$(timeout 60 "$u" 2>&1)
    if [ -n "$only" ]; then   # no stock build to compare with: the two runtimes' totals agree
        local mt ct
        mt=$(sed -n 's/^multi_thread: total=\([0-9]\{1,\}\)$/\1/p' <<< "$uo")
        ct=$(sed -n 's/^current_thread: total=\([0-9]\{1,\}\)$/\1/p' <<< "$uo")
        check "tokio $v usdt: the workload runs, both runtimes with the same total ($(echo "$uo" | tr '\n' ' '))" \
            test -n "$mt" -a "$mt" = "$ct"
        return
    fi
    check_eq "tokio $v nocfg: no tokio notes" 0 "$(tokio_notes "$KW/bin/nocfg" | wc -l)"
    km_func_sizes "$KW/bin/stock" > "$KW/fs-stock"; km_func_sizes "$KW/bin/nocfg" > "$KW/fs-nocfg"
    local a b nf
    a=$(km_text_size "$KW/bin/stock"); b=$(km_text_size "$KW/bin/nocfg"); nf=$(wc -l < "$KW/fs-stock")
    diff "$KW/fs-stock" "$KW/fs-nocfg" > "$KW/fs-diff"
    check "tokio $v nocfg: the same $nf functions with the same sizes as unpatched (nm), .text $a = $b bytes" \
        bash -c "[ '$nf' -gt 500 ] && [ -n '$a' ] && [ '$a' = '$b' ] && [ ! -s '$KW/fs-diff' ]"
    head -5 "$KW/fs-diff" | sed 's/^/#   /'
    so=$(timeout 60 "$KW/bin/stock" 2>&1)
    check "tokio $v: the workload runs (stock: $(echo "$so" | tr '\n' ' '))" grep -q '^current_thread: total=' <<< "$so"
    check_eq "tokio $v usdt: prints what the stock build prints" "$so" "$uo"
}

# km_line NAME: the line of the workload's `// SPAWN-SITE: NAME` marker
km_line() { grep -n "// SPAWN-SITE: $1\$" "$ROOT/tests/fixtures/kit/matrix-app/src/main.rs" | cut -d: -f1; }
# km_finding REPORT KIND NAME: how many KIND findings the report has at NAME's spawn line
km_finding() {
    jq -r --arg k "$2" --arg re "src/main\\.rs:$(km_line "$3"):[0-9]+$" \
        '[.findings[] | select(.kind == $k and ((.location // "") | test($re)))] | length' "$1"
}

# km_trace V: the usdt build traced twice (needs root, the tracer and trace_lib.sh): per-event
# capture with bpftrace attached to the same probes of the same binary before the process starts
# — the tracer's counts must equal bpftrace's — and batched capture; both must find the planted
# long poll, stall and lost waker at their spawn lines, and the counted workload's 4 tasks and 44
# polls.
km_trace() {
    local v=$1 bin=$KW/bin/usdt mode tp bp k n P th
    P="usdt:$bin:tokio"
    th=(--stall-threshold 500ms --lost-waker-threshold 500ms --long-poll-threshold 100ms)
    for mode in per-event batched; do
        rm -f "$KW/$mode.json"
        start_bg "km.$v.$mode" "$TRACER" --binary "$bin" --capture "$mode" --duration 120s -o "$KW/$mode.json" "${th[@]}"
        tp=$BG_PID
        if ! wait_for_line "$TMPD/km.$v.$mode.err" attached 60; then
            not_ok "tokio $v $mode: the tracer attached ($(tail -1 "$TMPD/km.$v.$mode.err"))"; stop_pid "$tp"; continue
        fi
        if [ $mode = per-event ]; then
            # bpftrace attached by path, as the tracer is, not to a -c child: a per-process
            # uprobe filters by the mm of the task it was opened for, so once the main thread
            # has left exit_group, a worker's last poll or park is seen by the tracer alone
            # (CI saw tracer +1 three times in ~100 releases: polls, unparks, task_terminate)
            start_bg "km.$v.bt" bpftrace -e "
                $P:task_poll_begin { @c[\"polls\"] = count(); }
                $P:waker_wake { @c[\"wakes\"] = count(); }
                $P:task_spawn { @c[\"spawns\"] = count(); }
                $P:task_terminate { @c[\"terminations\"] = count(); }
                $P:task_yielded { @c[\"yields\"] = count(); }
                $P:waker_clone { @c[\"waker_clones\"] = count(); }
                $P:waker_drop { @c[\"waker_drops\"] = count(); }
                $P:worker_park { @c[\"parks\"] = count(); }
                $P:worker_unpark { @c[\"unparks\"] = count(); }
                BEGIN { printf(\"ready\\n\"); }"
            bp=$BG_PID
            if ! wait_for_line "$TMPD/km.$v.bt.out" '^ready' 60; then
                not_ok "tokio $v: bpftrace attached ($(tail -1 "$TMPD/km.$v.bt.err"))"
                stop_pid "$bp"; stop_pid "$tp"; continue
            fi
            timeout 120 "$bin" faults 1 > "$KW/per-event.run" 2>&1
            check_eq "tokio $v: the workload ran under per-event capture and bpftrace" 0 $?
            bt_stop "$bp" "tokio $v"
            cp "$TMPD/km.$v.bt.out" "$KW/bt.out"
        else
            timeout 120 "$bin" faults 1 > "$KW/batched.run" 2>&1
            check_eq "tokio $v: the workload ran under batched capture" 0 $?
        fi
        sleep 0.3
        kill -INT "$tp"; wait_exit "$tp" 120
        check_eq "tokio $v $mode: the tracer exits 0" 0 "$RC"
        [ -s "$KW/$mode.json" ] || { not_ok "tokio $v $mode: no report"; tail -3 "$TMPD/km.$v.$mode.err"; continue; }
        check_eq "tokio $v $mode: capture mode, nothing dropped" "$mode 0" \
            "$(jq -r '"\(.capture.capture) \(.totals.drops)"' "$KW/$mode.json")"
        if [ $mode = per-event ]; then
            local got want=""
            got=$(jq -r '.totals | "polls=\(.polls) wakes=\(.wakes) spawns=\(.spawns) terminations=\(.terminations) yields=\(.yields) waker_clones=\(.waker_clones) waker_drops=\(.waker_drops) parks=\(.parks) unparks=\(.unparks)"' "$KW/$mode.json")
            for k in polls wakes spawns terminations yields waker_clones waker_drops parks unparks; do
                n=$(sed -n "s/^@c\[$k\]: //p" "$KW/bt.out" | head -1)
                want+="$k=${n:-0} "   # bpftrace prints no key it never counted
            done
            check_eq "tokio $v per-event: the tracer's counts equal bpftrace's" "${want% }" "$got"
        fi
        check_eq "tokio $v $mode: long_poll, stalled, lost_waker found at their spawn lines" "1 1 1" \
            "$(km_finding "$KW/$mode.json" long_poll long_poll) $(km_finding "$KW/$mode.json" stalled stalled) $(km_finding "$KW/$mode.json" lost_waker lost_waker)"
        check_eq "tokio $v $mode: the counted workload (4 tasks, 44 polls, 40 yields at its line)" "4 44 40" \
            "$(jq -r --arg re "src/main\\.rs:$(km_line yields):[0-9]+$" \
                '[.spawn_sites[] | select((.location // "") | test($re))] | "\(map(.tasks) | add) \(map(.polls) | add) \(map(.yields.yield_now) | add)"' "$KW/$mode.json")"
    done
}
