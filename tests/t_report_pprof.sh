#!/bin/bash
# Intent: --pprof FILE writes the CPU profile --stacks folds (and the polls' off-CPU time) as a
# gzipped pprof profile that go tool pprof (Debian's golang-go, an observer we did not write)
# reads, in every capture mode where --stacks works: batched and per-event capture of the usdt
# sample service (Tokio 1.53), the uprobe fallback on the stock build; each a 3 s capture of the
# cpu_hog and blocking_call pathologies under load.
#  - it loads: -top, -tags, -traces run and print samples;
#  - pprof's total of samples = the sum of the counts in the --stacks file of the same run, and
#    its off_cpu total = the report's blocked time (why.sites[].blocked_stacks[].ns);
#  - -tagfocus on the cpu_hog site's spawn_site label, shown as the program's own frames: the
#    top function is the pathology's cpu_hog_compute (the fallback: its site is the future type);
#  - -tags: the spawn_site labels name the cpu_hog and blocking_call sites; future_type, worker
#    and long_poll labels are there (usdt), syscall names the blocking sleep;
#  - refused where --stacks is (--no-sched, --profile-hz 0, --flight-recorder) and an unwritable
#    path: one line, nothing attached, nothing left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
command -v go > /dev/null || die_test "go missing (golang-go in scripts/packages.txt)"
export HOME="$TMPD/home" GOCACHE="$TMPD/gocache" GOFLAGS= GOPROXY=off
mkdir -p "$HOME"
HOG=$(loc_of cpu_hog) BLOCK=$(loc_of blocking_call)
[ -n "$HOG" ] && [ -n "$BLOCK" ] || die_test "no SPAWN-SITE markers"
pp() { go tool pprof -symbolize=none "$@" 2> "$TMPD/pp.err"; }
re_of() { printf '%s$' "$(sed 's/[].[\\*^$()+?{}|]/\\&/g' <<< "$1")"; }

capture() {  # capture TAG SERVICE_PID ARGS...: a 3 s capture with --stacks, --pprof and -o
    local tag=$1 sp=$2; shift 2
    start_bg "tr.$tag" "$TRACER" --pid "$sp" "$@" --profile-hz 499 --duration 3s -q \
        --stacks "$TMPD/$tag.folded" --pprof "$TMPD/$tag.pb.gz" -o "$TMPD/$tag.json"
    wait_exit "$BG_PID" 60
    check_eq "$tag: tracer exit 0" 0 "$RC"
    [ "$RC" = 0 ] || { cat "$TMPD/tr.$tag.err"; return 1; }
}

check_profile() {  # check_profile TAG HOG_SITE_RE SHOW_RE FULL(1: usdt labels)
    local tag=$1 P="$TMPD/$1.pb.gz" folded raw top tags
    check "$tag: gzip" gzip -t "$P"
    raw=$(pp -raw "$P") || { not_ok "$tag: go tool pprof -raw loads it: $(cat "$TMPD/pp.err")"; return; }
    # -raw: "Samples:", the types' line, then per sample "COUNT CPU_NS OFF_NS: LOCATIONS" and its
    # labels' line; then "Locations"
    read -r n off < <(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
        s && $1 ~ /^[0-9]+$/ { n += $1; sub(":", "", $3); off += $3 } END { print n + 0, off + 0 }' <<< "$raw")
    folded=$(awk '{ s += $NF } END { print s + 0 }' "$TMPD/$tag.folded")
    check "$tag: samples in polls ($folded)" test "$folded" -gt 50
    check_eq "$tag: pprof's samples total = the --stacks file's counts" "$folded" "$n"
    check_eq "$tag: pprof's off_cpu total = the report's blocked time (ns)" \
        "$(jq '[.why.sites[].blocked_stacks[].ns] | add // 0' "$TMPD/$tag.json")" "$off"
    check "$tag: -sample_index=samples -top: the same total" \
        bash -c "go tool pprof -symbolize=none -sample_index=samples -top '$P' 2>/dev/null | grep -q ' of $n total$'"
    top=$(pp -sample_index=samples -top -tagfocus="spawn_site=$2" -show="$3" "$P")
    echo "$top" | sed -n '/flat%/,+3p' | sed 's/^/# /'
    check "$tag: the cpu_hog site's samples: cpu_hog_compute tops them" \
        bash -c "sed -n '/flat%/{n;p;q}' <<< '$top' | grep -q 'cpu_hog_compute'"
    tags=$(pp -sample_index=samples -tags "$P")
    check "$tag: -tags: spawn_site names the cpu_hog site" grep -qE "${2#^}" <<< "$(grep -A20 '^ *spawn_site:' <<< "$tags")"
    check "$tag: -tags (off_cpu): syscall names the blocking sleep" \
        bash -c "go tool pprof -symbolize=none -sample_index=off_cpu -tags '$P' 2>/dev/null | grep -qE ': (clock_)?nanosleep$'"
    if [ "$4" = 1 ]; then
        check "$tag: -tags (off_cpu): spawn_site names the blocking_call site" \
            bash -c "go tool pprof -symbolize=none -sample_index=off_cpu -tags '$P' 2>/dev/null | grep -qE '$(re_of "$BLOCK")'"
        for k in future_type worker long_poll; do
            check "$tag: -tags: $k labels" grep -q "^ *$k: Total" <<< "$tags"
        done
        check "$tag: long_poll true on the hog's samples" \
            bash -c "go tool pprof -symbolize=none -sample_index=samples -tags -tagfocus='spawn_site=$2' '$P' 2>/dev/null | grep -A3 '^ *long_poll:' | grep -q ': true$'"
    fi
    check "$tag: -traces prints samples" bash -c "go tool pprof -symbolize=none -traces '$P' 2>/dev/null | grep -q 'spawn_site:'"
}

need_sample 1.53 usdt; bin=$SAMPLE
start_bg svc "$bin" serve --workers 2 --pathology cpu_hog,blocking_call --load 50 --duration 60s
SP=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "service listening: $(cat "$TMPD/svc.err")"
for cap in batched per-event; do
    capture "$cap" "$SP" --capture "$cap" &&
        check_profile "$cap" "$(re_of "$HOG")" '^sample_service::' 1
done
stop_pid "$SP"

need_sample 1.53 stock; sbin=$SAMPLE
start_bg ssvc "$sbin" serve --workers 2 --pathology cpu_hog,blocking_call --load 50 --duration 60s
SP=$BG_PID
wait_for_line "$TMPD/ssvc.out" '^listening on ' 30 || die_test "stock service listening: $(cat "$TMPD/ssvc.err")"
capture uprobe "$SP" --mode uprobe &&
    check_profile uprobe '^future .*cpu_hog_compute' '^sample_service::' 0

# refused where --stacks is, and an unwritable path: before anything is attached
mkdir -p "$TMPD/bad"
expect_fail "--pprof with --no-sched" 3 "--pprof needs the CPU profile" \
    "$TRACER" --pid "$SP" --no-sched --pprof "$TMPD/bad/p.pb.gz" --duration 1s
expect_fail "--pprof with --profile-hz 0" 3 "--pprof needs the CPU profile" \
    "$TRACER" --pid "$SP" --profile-hz 0 --pprof "$TMPD/bad/p.pb.gz" --duration 1s
expect_fail "--pprof with --flight-recorder" 3 "drop --output, --trace, --stacks and --pprof" \
    "$TRACER" --pid "$SP" --flight-recorder 10s --pprof "$TMPD/bad/p.pb.gz"
expect_fail "--pprof in a missing directory" 4 "cannot write the pprof profile $TMPD/bad/none/p.pb.gz: its directory does not exist" \
    "$TRACER" --pid "$SP" --pprof "$TMPD/bad/none/p.pb.gz" -o "$TMPD/bad/r.json" --duration 1s
mkdir -p "$TMPD/bad/dir.pb.gz"
expect_fail "--pprof naming a directory" 4 "cannot write the pprof profile $TMPD/bad/dir.pb.gz: Is a directory" \
    "$TRACER" --pid "$SP" --pprof "$TMPD/bad/dir.pb.gz" -o "$TMPD/bad/r.json" --duration 1s
check_eq "nothing left behind (the other output, no temporary)" "dir.pb.gz" "$(ls -A "$TMPD/bad")"
stop_pid "$SP"
finish
