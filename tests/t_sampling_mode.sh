#!/bin/bash
# Intent: `trace --mode sampling` (issue 27) finds the stock sample service's pathologies with no
# uprobe at all, by their future types, on the three Debian Tokio lines (1.24: the tagged slot
# layout; 1.43, 1.53: niche). The stock builds have no frame pointers: the poll frame comes from
# the BPF side's scan of the user stack (sched.bpf.h scan_polls), so this tests that path.
#  - serve --pathology blocking_call,cpu_hog under load, traced 3 s at 499 Hz with a 5 ms
#    long-poll threshold (samples count CPU time: the hog's 30 ms of wall time were under 10 ms of
#    CPU, no long poll, on this machine at load 8-10; 5 ms is also a stricter test of the healthy
#    tasks, and of the short polls below): at least one
#    on-CPU long_poll of cpu_hog_compute's future, each with hottest frame cpu_hog_compute, and at
#    least one blocked long_poll of blocking_call_in_async's future, slept in clock_nanosleep /
#    nanosleep with legacy_sync_lookup as its frame; no finding of any other future type (the
#    load's healthy tasks); the types' table has cpu_hog_compute's hottest frame its own; the
#    report says what the mode cannot see (not_seen) and that it attached no uprobe;
#  - on request, the kit's build (1.53 usdt: frame pointers; its raw::poll opens an empty frame
#    before the jmp) gets the same findings, every poll frame from the frame walk, no scan;
#  - while it runs (1.53), bpftool (an observer we did not write) lists the tracer's sched_switch
#    tracepoint and perf_event links of its tet_sample program, no uprobe / uretprobe of it, and
#    no uprobe_multi link on the binary;
#  - the 1.53 stock run also writes --stacks, --pprof and --trace (docs/sampling-mode.md): the
#    folded counts sum to the JSON's attribution.in_async_poll (the samples the profile holds);
#    go tool pprof (Debian's golang-go, an observer we did not write) loads the profile: its
#    samples total is the same, its off_cpu total on long_poll=true samples is the blocked
#    findings' off_cpu_ns, and -tagfocus on the cpu_hog future type puts cpu_hog_compute on top;
#    tests/check_trace.py (as t_report_trace) accepts the trace, its threads named, and it has one
#    long_poll slice per on-CPU finding of cpu_hog and one long blocked slice per blocked finding
#    of blocking_call; a --stacks, -o .json or -o .html in a missing directory is refused before
#    anything is attached (exit 4), nothing left behind;
#  - with the analysis' caps lowered to 1 (TET_TEST_SAMPLING_CAP), 2 s of 1.53: the report is
#    still written, at most one thread, task, type and finding kept, the rest counted in `refused`;
#  - short polls back to back with no sleep between (the yield workload, 1000 tasks, stock 1.53)
#    on a current_thread runtime (its slot is None between polls) and on 2 workers (the slot holds
#    the worker loop's blocking-task id): no long_poll (each poll lasts ~100 ns), though the
#    samples in poll frames outside a poll's body (Harness::poll's own code, or a poll frame the
#    stack scan finds left over in the stack) are many (attribution.outside_poll_body) — they
#    once borrowed a neighbour's task id and joined runs, making 9-21 false long polls in 3 s;
#  - the 1.53 stock run (4 s) also serves --metrics-addr and prints --interval 1s: a scrape taken while
#    it runs passes promtool check metrics, and its counters (samples, sleeps, cpu_hog_compute's
#    samples and on-CPU long polls by future_type) are > 0 and at most the final JSON's; the
#    interval summaries come every second with growing sample counts, at most the JSON's; and
#    it pushes the same families by --remote-write to a real Prometheus (the
#    receiver t_remote_write uses, an independent decoder; every 1.5 s, so that no live push
#    falls at the end): the series Prometheus stores carry
#    the run's labels (mode="sampling", pid, executable, tokio_release 1.53.x, host, capture),
#    the last values are the final JSON's exact figures (samples, cpu_hog_compute's samples and
#    on-CPU long polls: the push at exit holds the final analysis), earlier pushes of the run
#    are there too (lower, none above it), and the JSON's remote_write counts the pushes with
#    no failure;
#  - every line: the worker heat map adds up (check_heat: the buckets' samples are the threads'
#    samples, 30-120 buckets, a row for each worker); the 1.53 stock run writes report.html too,
#    checked by python3's html.parser (balanced) and in Chromium (check_html: the future types,
#    the mode's facts, the long polls (blocking_call_in_async's blocked ones), a heat-map row
#    per thread with every bucket);
#  - every line: the 2 workers' loop ids (their blocking tasks') were told to the BPF side (at
#    least 2, none refused) and some sleeps were recorded in them without the stack scan, fewer
#    than all (sleeps_in_blocking_tasks); the blocked long polls above still have their stacks;
#    on 1.53 stock, bpftool dumps the tracer's blocking_ids map with at least 2 ids while it runs;
#  - the 1.53 stock service traced again with --flight-recorder 2s, --trigger long_poll and
#    SIGUSR1 (check_flight): a dump of each, named as the other modes' dumps, their three files
#    handed to --on-dump; the long_poll one holds its finding, the SIGUSR1 one the hog's long
#    polls and only samples of its window; an unusable --dump-dir and a trigger this mode has no
#    finding for refused before anything is attached;
#  - refusals, one line each: a stripped copy, a process with no Tokio, no --pid.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/report_lib.sh"
need_root
need_tracer
need_chromium
command -v bpftool > /dev/null || die_test "bpftool is missing (scripts/packages.txt)"
command -v promtool > /dev/null || die_test "promtool missing (Debian package prometheus: make deps)"
command -v go > /dev/null || die_test "go missing (golang-go in scripts/packages.txt)"
export HOME="$TMPD/home" GOCACHE="$TMPD/gocache" GOFLAGS= GOPROXY=off
mkdir -p "$HOME"
pp() { go tool pprof -symbolize=none "$@" 2> "$TMPD/pp.err"; }

# check_profiles JSON: the 1.53 stock run's --stacks, --pprof and --trace against its JSON
check_profiles() {
    local j=$1 P="$TMPD/s.pb.gz" T="$TMPD/s.trace.json" n raw folded off top
    n=$(jqr "$j" .attribution.in_async_poll)
    folded=$(awk '{ s += $NF } END { print s + 0 }' "$TMPD/s.folded")
    check "profiles: samples in async polls ($n)" test "$n" -gt 20
    check_eq "--stacks: the folded counts sum to attribution.in_async_poll" "$n" "$folded"
    check "--stacks: no frame pointers: the leaf under the future type and the marker" \
        grep -q '^sample_service::pathology::cpu_hog_compute[^;]*;\[no_frame_pointers' "$TMPD/s.folded"
    raw=$(pp -raw "$P") || { not_ok "--pprof: go tool pprof -raw loads it: $(cat "$TMPD/pp.err")"; return; }
    # -raw: per sample "COUNT CPU_NS OFF_NS: LOCATIONS", then its labels' line
    read -r folded off < <(awk '/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
        s && $1 ~ /^[0-9]+$/ { n += $1; sub(":", "", $3); v = $3; next }
        s && /long_poll:\[true\]/ { off += v } END { print n + 0, off + 0 }' <<< "$raw")
    check_eq "--pprof: go tool pprof's samples total = attribution.in_async_poll" "$n" "$folded"
    check_eq "--pprof: off_cpu of the long_poll sleeps = the blocked findings' off_cpu_ns" \
        "$(jqr "$j" '[.findings[] | select(.seen_as == "blocked") | .off_cpu_ns] | add // 0')" "$off"
    top=$(pp -sample_index=samples -top -tagfocus='future_type=cpu_hog_compute' -show='^sample_service::' "$P")
    echo "$top" | sed -n '/flat%/,+2p' | sed 's/^/# /'
    check "--pprof: -tagfocus on cpu_hog's future type: cpu_hog_compute tops it" \
        grep -q 'cpu_hog_compute' <<< "$(sed -n '/flat%/{n;p;q}' <<< "$top")"
    python3 tests/check_trace.py "$T" > "$TMPD/check.out"
    check "--trace: valid trace-event JSON, every thread named (tests/check_trace.py)" test $? = 0
    check "--trace: threads named by their comm and tid" \
        bash -c "jq -r '.thread_names[]' '$TMPD/check.out' | grep -q '^tokio-rt-worker (tid [0-9]*)$'"
    check_eq "--trace: a long_poll slice per on-CPU finding of cpu_hog" \
        "$(jqr "$j" '[.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length')" \
        "$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "long_poll" and (.name | test("cpu_hog_compute")))] | length' "$T")"
    check_eq "--trace: a long blocked slice per blocked finding of blocking_call" \
        "$(jqr "$j" '[.findings[] | select(.seen_as == "blocked" and (.future_type | test("blocking_call_in_async")))] | length')" \
        "$(jq '[.traceEvents[] | select(.ph == "X" and .cat == "blocked" and .args.long_poll and (.name | test("blocking_call_in_async")))] | length' "$T")"
}

# links_of PID FILTER [NAME]: how many distinct programs of process PID (the prog_id of its
# fds, /proc/PID/fdinfo) the links bpftool lists ($TMPD/link.json) that pass FILTER run (named
# NAME when given; bpftool prints a link type it has no name for as its number: uprobe_multi is 12)
links_of() {
    local n=0 id mine
    mine=" $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2> /dev/null | awk '{print $2}' | sort -u | tr '\n' ' ') "
    for id in $(jq "[.[] | select($2) | .prog_id] | unique | .[]" "$TMPD/link.json"); do
        [[ $mine == *" $id "* ]] || continue
        [ -z "${3:-}" ] || bpftool -j prog show id "$id" 2> /dev/null | jq -e --arg n "$3" '.name == $n' > /dev/null ||
            continue
        n=$((n + 1))
    done
    echo "$n"
}

# metric NAME_AND_LABELS: its value in the scrape ($TMPD/scrape.txt), labels matched as a regex
metric() { grep -E "^$1 " "$TMPD/scrape.txt" | awk '{ v = $NF } END { print v + 0 }'; }

# check_live LINE JSON: the scrape taken while it ran and the --interval summaries, against the
# final report (docs/sampling-mode.md "While it runs"): promtool accepts the scrape; its counters
# are > 0 and no more than the report's (the same analysis on fewer records); the summaries came
# every second, their sample counts growing, none above the report's.
check_live() {
    local v=$1 j=$2 hog='future_type="[^"]*cpu_hog_compute[^"]*"'
    check "$v: metrics: promtool check metrics accepts the scrape" bash -c "promtool check metrics < '$TMPD/scrape.txt'"
    check_eq "$v: metrics: samples, sleeps, in async polls > 0 and at most the report's" true \
        "$(jq --argjson s "$(metric tokio_trace_sampling_samples_total)" --argjson z "$(metric tokio_trace_sampling_sleeps_total)" \
            --argjson p "$(metric tokio_trace_sampling_samples_in_async_poll_total)" \
            '$s > 0 and $s <= .capture.samples and $z > 0 and $z <= .capture.sleeps and $p > 0 and $p <= .attribution.in_async_poll' "$j")"
    check_eq "$v: metrics: cpu_hog_compute's samples and on-CPU long polls > 0, at most the report's" true \
        "$(jq --argjson s "$(metric "tokio_trace_sampling_future_samples_total\\{$hog\\}")" \
            --argjson f "$(metric "tokio_trace_sampling_long_polls_total\\{$hog,seen_as=\"on_cpu\"\\}")" \
            '$s > 0 and $s <= ([.future_types[] | select(.type | test("cpu_hog_compute")) | .samples] | add) and
             $f > 0 and $f <= ([.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length)' "$j")"
    check_eq "$v: metrics: the label limit (--metrics-sites) and the mode" "50 1" \
        "$(metric tokio_trace_sampling_future_type_label_limit) $(metric 'tokio_trace_info\{mode="sampling".*')"
    grep '^-- sampling pid' "$TMPD/tr.$v.out" | sed 's/.*, \([0-9]*\) samples.*/\1/' > "$TMPD/interval.n"
    echo "# $v: --interval 1s: $(wc -l < "$TMPD/interval.n") summaries, samples $(tr '\n' ' ' < "$TMPD/interval.n")"
    check_eq "$v: --interval 1s: 3 to 5 summaries in 4 s, samples growing, at most the report's" true \
        "$(jq -s --argjson t "$(jqr "$j" .capture.samples)" 'length >= 3 and length <= 5 and . == unique and .[0] > 0 and .[-1] <= $t' "$TMPD/interval.n")"
}

# check_remote_write LINE JSON PID: what the Prometheus receiver stored of the --remote-write
# pushes of that run, against its final JSON (docs/sampling-mode.md "While it runs")
check_remote_write() {
    local v=$1 j=$2 sel="pid=\"$3\"" hog='future_type=~".*cpu_hog_compute.*"' lab n
    check "$v: remote write: says where it pushes" grep -q "pushing the metrics to $API/api/v1/write every 1.5s (Prometheus remote write)" "$TMPD/tr.$v.err"
    curl -sf --get "$API/api/v1/query" --data-urlencode "query=tokio_trace_sampling_samples_total{$sel}" > "$TMPD/rw.series"
    lab=$(jq -r '.data.result[0].metric | "\(.mode) \(.capture) \(.host) \(.executable) \(.tokio_release)"' "$TMPD/rw.series")
    echo "# $v: remote write: labels $lab"
    check_eq "$v: remote write: the run's labels (mode sampling, capture, host, executable)" \
        "sampling perf-event $(uname -n) $(readlink -f "$(sample_bin 1.53 stock)")" "${lab% *}"
    check "$v: remote write: label tokio_release, the binary's release (${lab##* })" grep -qE '^1\.53\.[0-9]+$' <<< "${lab##* }"
    # the last push is the final analysis's: the report's exact figures (a live one is lower:
    # pushed at ~0, 1.5 and 3 s of the 4 s, none due near the end)
    check_eq "$v: remote write: the last samples total = the report's capture.samples (the push at exit)" \
        "$(jqr "$j" .capture.samples)" "$(prom_q "tokio_trace_sampling_samples_total{$sel}")"
    check_eq "$v: remote write: cpu_hog_compute's samples and on-CPU long polls = the report's" \
        "$(jqr "$j" '"\([.future_types[] | select(.type | test("cpu_hog_compute")) | .samples] | add) \([.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length)"')" \
        "$(prom_q "sum(tokio_trace_sampling_future_samples_total{$sel,$hog})") $(prom_q "sum(tokio_trace_sampling_long_polls_total{$sel,$hog,seen_as=\"on_cpu\"})")"
    n=$(prom_q "count_over_time(tokio_trace_sampling_samples_total{$sel}[10m])")
    check "$v: remote write: pushes while it ran too ($n samples of the series in Prometheus)" test "${n:-0}" -ge 3
    check_eq "$v: remote write: the earlier pushes' totals lower, none above the report's" \
        "$(jqr "$j" .capture.samples) true" \
        "$(prom_q "max_over_time(tokio_trace_sampling_samples_total{$sel}[10m])") $(jq -n --argjson lo "$(prom_q "min_over_time(tokio_trace_sampling_samples_total{$sel}[10m])")" --argjson t "$(jqr "$j" .capture.samples)" '$lo < $t')"
    check "$v: remote write: the JSON counts the pushes delivered ($(jqr "$j" .remote_write.pushes))" \
        test "$(jqr "$j" .remote_write.pushes)" -ge 4
    check_eq "$v: remote write: no failure, nothing dropped" "0 0 0 0 0 0" \
        "$(jqr "$j" '[.remote_write.failures[], .remote_write.dropped_samples[]] | map(tostring) | join(" ")')"
    check "$v: remote write: the terminal summary's line" grep -qE '^remote write to .*: [0-9]+ pushes delivered' "$TMPD/tr.$v.out"
}

# check_heat LINE JSON: the worker heat map adds up: per row the buckets' samples (in async polls
# and outside) are the row's samples and the thread's in .threads, those in polls its
# in_async_poll; every thread has a row (none omitted); 30-120 buckets at least a period wide;
# the off-CPU time of a bucket never more than its width; each worker (a tokio-r* thread) a row
check_heat() {
    local v=$1 j=$2
    echo "# $v: heat map $(jqr "$j" '.worker_heat | "\(.buckets) buckets of \(.bucket_ns) ns, rows \([.rows[] | "\(.tid) \(.name) \(.samples)"] | join(", "))"')"
    check_eq "$v: heat map: per thread, the buckets' samples = the thread's samples; in polls = its in_async_poll" true \
        "$(jqr "$j" '(.threads | map({key: (.tid | tostring), value: .samples}) | from_entries) as $t | .worker_heat.rows | length > 0 and all(([.async_poll_samples[], .other_samples[]] | add) == .samples and ([.async_poll_samples[]] | add) == .in_async_poll and (.samples == 0 or $t[.tid | tostring] == .samples))')"
    check_eq "$v: heat map: every sample in a row (no thread omitted)" true \
        "$(jqr "$j" '.worker_heat.threads_omitted == 0 and ([.worker_heat.rows[].samples] | add) == .capture.samples')"
    check_eq "$v: heat map: 30-120 buckets, each at least a period; off CPU within a bucket" true \
        "$(jqr "$j" '.worker_heat | .buckets >= 30 and .buckets <= 120 and .bucket_ns >= .period_ns and (.bucket_ns as $w | .buckets as $n | all(.rows[]; (.off_cpu_ns_by_bucket | length) == $n and all(.off_cpu_ns_by_bucket[]; . <= $w)))')"
    check_eq "$v: heat map: the 2 workers (tokio-r* threads) each have a row" true \
        "$(jqr "$j" '[.worker_heat.rows[] | select(.name // "" | test("^tokio-r"))] | length >= 2')"
}

# check_html LINE JSON HTML: report.html of the same run: an independent parser (python3's
# html.parser) finds every element closed in order; in Chromium (tests/browser.py, as the other
# HTML tests) no console error, no script, the JSON's future types (cpu_hog_compute's among
# them) and blocking_call_in_async's in the blocked long polls, the mode's
# facts (no uprobe, the rate, what it cannot see), long polls of both kinds, and the heat map:
# one row per row of the JSON's (every worker), each with the JSON's bucket count of cells
check_html() {
    local v=$1 j=$2 h=$3 B
    [ -s "$h" ] || { not_ok "$v: report.html written"; return; }
    check_eq "$v: report.html: html.parser finds every element closed in order" ok "$(python3 - "$h" <<'PY'
import html.parser, sys
VOID = {"meta", "br", "img", "input", "link", "hr", "col", "wbr"}
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.bad = [], []
    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)
    def handle_endtag(self, tag):
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.bad.append((tag, self.stack[-3:]))
p = P()
p.feed(open(sys.argv[1], encoding="utf-8").read())
p.close()
print("ok" if not p.bad and not p.stack else f"unbalanced {p.bad[:3]} open {p.stack}")
PY
)"
    EXPR=$(cat <<'JS'
(() => ({
  scripts: document.scripts.length,
  types: [...document.querySelectorAll('#types td.type')].map(t => t.textContent),
  mode: document.querySelector('#mode').textContent,
  oncpu: document.querySelectorAll('#findings table.on-cpu tr').length - 1,
  blocked: document.querySelectorAll('#findings table.blocked tr').length - 1,
  blocked_types: [...document.querySelectorAll('#findings table.blocked td:first-child')].map(t => t.textContent),
  rows: [...document.querySelectorAll('#heat tr.heat-row')].map(r => ({tid: +r.dataset.tid, cells: r.querySelectorAll('td').length})),
}))()
JS
)
    check "$v: chromium opened report.html" browse "sampling-$v" "$h" "$EXPR"
    B="$TMPD/sampling-$v.browser.json"
    no_page_errors "sampling-$v"
    check_eq "$v: report.html: no script" 0 "$(jq .eval.scripts "$B")"
    # blocking_call_in_async's polls sleep: its type has a CPU sample in some runs only, a
    # blocked long poll in every run (checked in the JSON above)
    check_eq "$v: report.html's types table: the JSON's future types (cpu_hog_compute's among them)" \
        "$(jqr "$j" '[.future_types[].type] | sort | join("|")') true" \
        "$(jq -r '"\(.eval.types | sort | join("|")) \(.eval.types | any(test("cpu_hog_compute")))"' "$B")"
    check_eq "$v: report.html's blocked long polls name blocking_call_in_async's future type" true \
        "$(jq '.eval.blocked_types | length > 0 and all(test("blocking_call_in_async"))' "$B")"
    check_eq "$v: report.html: the mode's facts (no uprobe, 499 Hz, task id slot, what it cannot see)" true \
        "$(jq '.eval.mode | test("no uprobe") and test("499 Hz") and test("task id slot") and test("scheduling_delay")' "$B")"
    check_eq "$v: report.html: the long polls of both kinds, as many as the JSON's" \
        "$(jqr "$j" '"\([.findings[] | select(.seen_as == "on_cpu")] | length) \([.findings[] | select(.seen_as == "blocked")] | length)"')" \
        "$(jq -r '"\(.eval.oncpu) \(.eval.blocked)"' "$B")"
    check_eq "$v: report.html: the heat map, a row per JSON row (every worker), each with every bucket" \
        "$(jqr "$j" '.worker_heat as $h | [$h.rows[] | "\(.tid):\($h.buckets)"] | join(" ")')" \
        "$(jq -r '[.eval.rows[] | "\(.tid):\(.cells)"] | join(" ")' "$B")"
}

# check_flight PID: the flight recorder (docs/sampling-mode.md "Flight recorder") on the 1.53 stock
# service: a 2 s window, --trigger long_poll (a cooldown of 1 h: one such dump), and SIGUSR1 3.5 s
# after the attach, each dump handed to --on-dump; their names and files; the long_poll dump
# holds the finding that fired it (its task, cpu_hog_compute's); the SIGUSR1 dump: its JSON (jq),
# the hog's long polls by future type, and every sample in the window: the heat map's buckets
# holding samples lie within [T - 2 s, T + post-trigger + slack], T the monotonic clock
# (python3's time.monotonic_ns: CLOCK_MONOTONIC, the records' clock) read just before the
# signal; then the bad inputs, refused before anything is attached
check_flight() {
    local sp=$1 fd="$TMPD/fr" fp t frj n nl
    mkdir -p "$fd"
    start_bg fr "$TRACER" trace --pid "$sp" --mode sampling --profile-hz 499 --long-poll-threshold 5ms \
        --flight-recorder 2s --trigger long_poll --trigger-cooldown 1h --dump-dir "$fd" \
        --on-dump 'echo "on-dump: $TET_DUMP_TRIGGER $# $TET_DUMP_NAME"'
    fp=$BG_PID
    wait_for_line "$TMPD/fr.err" attached 20 || not_ok "flight recorder: attached"
    sleep 3.5
    t=$(python3 -c 'import time; print(time.monotonic_ns())')
    kill -USR1 "$fp"
    wait_for_line "$TMPD/fr.err" '^on-dump: sigusr1 3 ' 20 || not_ok "flight recorder: the dump handed to --on-dump"
    kill -INT "$fp"
    wait_exit "$fp" 30
    check_eq "flight recorder: tracer exit 0" 0 "$RC"
    n=$(sed -n 's/^on-dump: sigusr1 3 //p' "$TMPD/fr.err")
    nl=$(sed -n 's/^on-dump: long_poll 3 //p' "$TMPD/fr.err")
    check "flight recorder: the dumps named <executable>-<pid>-<UTC time>-<trigger> ($n, $nl)" \
        grep -qE "^sample-service-$sp-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-sigusr1 sample-service-$sp-[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-long_poll\$" <<< "$n $nl"
    check_eq "flight recorder: three files a dump, nothing else" \
        "$(printf '%s\n' "$n".{html,json,trace.json} "$nl".{html,json,trace.json} | sort | xargs)" "$(cd "$fd" && ls | sort | xargs)"
    check_eq "flight recorder: the long_poll dump holds the finding that fired it (its task: cpu_hog_compute's, on CPU)" true \
        "$(jq '.flight_recorder.trigger as $t | $t.kind == "long_poll" and $t.task_id > 0 and
            ([.findings[] | select(.task == $t.task_id and .seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length) > 0' "$fd/$nl.json")"
    frj="$fd/$n.json"
    check_eq "flight recorder: the dump is valid JSON (jq)" true "$(jq 'type == "object"' "$frj")"
    check_eq "flight recorder: its trace is valid JSON (jq), with events" true "$(jq '.traceEvents | length > 0' "$fd/$n.trace.json")"
    check_eq "flight recorder: the dump's flight_recorder: its name, trigger sigusr1, the 2 s window and 500 ms after" \
        "$n sigusr1 2000000000 500000000" \
        "$(jqr "$frj" '"\(.flight_recorder.name) \(.flight_recorder.trigger.kind) \(.flight_recorder.window_ns) \(.flight_recorder.post_trigger_ns)"')"
    check_eq "flight recorder: the worker loops' ids told to the BPF side, their parks recorded without a scan" true \
        "$(jqr "$frj" '.capture | .blocking_task_ids >= 2 and .sleeps_in_blocking_tasks > 0')"
    check_eq "flight recorder: the hog's long polls in the dump, by their future type" true \
        "$(jqr "$frj" '[.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length > 0')"
    echo "# flight recorder: T $t, heat $(jqr "$frj" '.worker_heat | "\(.start_ns)..\(.end_ns) by \(.bucket_ns)"'), samples $(jqr "$frj" .capture.samples)"
    check_eq "flight recorder: samples in the dump, all of them in the window (T - 2 s .. T + 0.5 s + 2 s of slack)" true \
        "$(jq --argjson lo "$(( t - 2000000000 ))" --argjson hi "$(( t + 2500000000 ))" '.worker_heat as $h |
            [$h.rows[] | [.async_poll_samples, .other_samples] | transpose | to_entries[] |
             select(.value[0] + .value[1] > 0) | $h.start_ns + .key * $h.bucket_ns] |
            length > 0 and (min + $h.bucket_ns > $lo) and (max < $hi)' "$frj")"
    check "flight recorder: report.html says what fired the dump" grep -qE 'id="flight"><b>Flight-recorder</b> dump [0-9]+: trigger sigusr1' "$fd/$n.html"
    expect_fail "flight recorder: a --dump-dir where no file can be created" 4 "--dump-dir /proc: cannot create files in it" \
        "$TRACER" trace --pid "$sp" --mode sampling --flight-recorder 2s --dump-dir /proc
    expect_fail "flight recorder: --trigger stalled (not a finding of this mode)" 3 "dumps on SIGUSR1, exit, crash and long_poll only: --trigger stalled is not" \
        "$TRACER" trace --pid "$sp" --mode sampling --flight-recorder 2s --dump-dir "$fd" --trigger stalled
    expect_fail "flight recorder: with --remote-write (its window is analysed at a dump only)" 3 "does not serve the mode's live outputs: drop --remote-write" \
        "$TRACER" trace --pid "$sp" --mode sampling --flight-recorder 2s --dump-dir "$fd" --remote-write http://127.0.0.1:9/api/v1/write
    expect_fail "flight recorder: with --metrics-addr" 3 "does not serve the mode's live outputs: drop --metrics-addr" \
        "$TRACER" trace --pid "$sp" --mode sampling --flight-recorder 2s --dump-dir "$fd" --metrics-addr 127.0.0.1:0
}

run_line() {  # run_line LINE [FLAVOUR]
    local v=$1 bin j tp sp live dur t_att
    bin=$(sample_bin "$v" "${2:-stock}")
    [ -z "${2:-}" ] || v="$v-$2"
    need_file "$bin" "the stock sample service $v"
    start_bg "svc.$v" "$bin" serve --workers 2 --pathology blocking_call,cpu_hog --load 20 --duration 30s
    sp=$BG_PID
    wait_exec "$sp" "$bin"
    sleep 0.5
    j="$TMPD/s$v.json"
    local outs=() dur=3s  # 1.53 stock: the live outputs (metrics, --interval; 4 s), report.html and the profiles too
    live=()
    [ "$v" = 1.53 ] && [ -z "${2:-}" ] && live=(--metrics-addr 127.0.0.1:0 --interval 1s
        --remote-write "$API/api/v1/write" --remote-write-interval 1500ms) dur=4s
    [ "$v" = 1.53 ] && outs=(--stacks "$TMPD/s.folded" --pprof "$TMPD/s.pb.gz" --trace "$TMPD/s.trace.json" -o "$TMPD/s$v.html")
    start_bg "tr.$v" "$TRACER" trace --pid "$sp" --mode sampling --profile-hz 499 --long-poll-threshold 5ms --duration $dur -o "$j" "${live[@]}" "${outs[@]}"
    tp=$BG_PID
    wait_for_line "$TMPD/tr.$v.err" attached 20 || { not_ok "$v: attached"; cat "$TMPD/tr.$v.err"; }
    t_att=$(date +%s%N)
    if [ "$v" = 1.53 ]; then
        bpftool -j perf show > "$TMPD/perf.json" 2> /dev/null
        bpftool -j link show > "$TMPD/link.json" 2> /dev/null
        check_eq "$v: bpftool perf show: the tracer's sched_switch tracepoint" 1 \
            "$(jq --argjson p "$tp" '[.[] | select(.pid == $p and .tracepoint == "sched_switch")] | length' "$TMPD/perf.json")"
        check_eq "$v: bpftool link show: perf_event links of the tracer's tet_sample (the sampler)" 1 \
            "$(links_of "$tp" '.type == "perf_event"' tet_sample)"
        check_eq "$v: bpftool perf show: no uprobe or uretprobe of the tracer" 0 \
            "$(jq --argjson p "$tp" '[.[] | select(.pid == $p and (.fd_type | test("uprobe|uretprobe")))] | length' "$TMPD/perf.json")"
        check_eq "$v: bpftool link show: no uprobe_multi link of the tracer" 0 \
            "$(links_of "$tp" '.type == "uprobe_multi" or .type == 12')"
        # --nice's default, as the other modes' live capture (ps reads /proc/PID/stat)
        check_eq "$v: the tracer runs at nice 10 (the default)" 10 "$(ps -o ni= -p "$tp" | tr -d ' ')"
    fi
    if [ "${#live[@]}" -gt 0 ]; then
        # a scrape at least 2 s into the 4 s capture (after bpftool's look; the figures are
        # rendered from an analysis of the records so far, at most once a second)
        # rendered from an analysis of the records so far, at most once a second); on a loaded
        # machine the hog's first long poll can come late: scraped again every 0.3 s until it is
        # there, up to 3.5 s in (the last scrape is the one checked)
        sleep "$(awk -v e="$(( ($(date +%s%N) - t_att) / 1000000 ))" 'BEGIN { print e < 2000 ? (2000 - e) / 1000 : 0 }')"
        local url ok=0
        url=$(sed -n 's/.*Prometheus metrics at \(http[^ ]*\).*/\1/p' "$TMPD/tr.$v.err")
        while :; do
            curl -sf --max-time 3 -o "$TMPD/scrape.txt" "$url" && ok=1
            grep -qE '^tokio_trace_sampling_long_polls_total\{future_type="[^"]*cpu_hog_compute[^"]*",seen_as="on_cpu"\} [1-9]' \
                "$TMPD/scrape.txt" 2> /dev/null && break
            [ $(( ($(date +%s%N) - t_att) / 1000000 )) -lt 3500 ] || break
            sleep 0.3
        done
        [ "$ok" = 1 ] || not_ok "$v: the metrics endpoint answered"
        # the worker loops' blocking-task ids the tracer has told its BPF side, as bpftool
        # dumps the tracer's own map (the map ids of its fds: other tracers may run beside it)
        local mid
        mid=$(bpftool -j map show 2> /dev/null | jq --argjson m "[$(sed -n 's/^map_id:[[:space:]]*//p' /proc/"$tp"/fdinfo/* 2> /dev/null | paste -sd,)]" \
            '[.[] | select(.name == "blocking_ids" and (.id as $i | $m | index($i))) | .id][0] // empty')
        bpftool -j map dump id "${mid:-0}" > "$TMPD/blk.json" 2> /dev/null || echo '[]' > "$TMPD/blk.json"
        echo "# $v: bpftool map dump of the tracer's blocking_ids: $(jq -c '[.[] | .formatted.key // .key]' "$TMPD/blk.json")"
        check_eq "$v: bpftool: the tracer's blocking_ids map holds the 2 workers' loop ids (at least 2)" true \
            "$(jq 'length >= 2' "$TMPD/blk.json")"
    fi
    wait_exit "$tp" 30
    check_eq "$v: tracer exit 0" 0 "$RC"
    # the analysis' caps (docs/sampling-mode.md), all lowered to 1: refused and counted, the
    # report still written
    if [ "$v" = 1.53 ] && [ -z "${2:-}" ]; then
        TET_TEST_SAMPLING_CAP=1 "$TRACER" trace --pid "$sp" --mode sampling --profile-hz 499 --duration 2s \
            -o "$TMPD/cap.json" > "$TMPD/cap.out" 2> "$TMPD/cap.err"
        local crc=$?
        check_eq "caps of 1: tracer exit 0, a report" "0 true" "$crc $([ -s "$TMPD/cap.json" ] && echo true)"
        echo "# caps of 1: refused $(jqr "$TMPD/cap.json" '.refused | tostring')"
        check_eq "caps of 1: at most one thread, task, future type, finding kept; the others refused and counted" true \
            "$(jqr "$TMPD/cap.json" '.capture.samples > 0 and (.threads | length) == 1 and (.tasks | length) <= 1 and (.future_types | length) <= 1 and (.findings | length) <= 1 and ([.refused[]] | add) > 0')"
        check "caps of 1: the terminal summary's Not kept line" grep -q "^Not kept (tables full" "$TMPD/cap.out"
        check_eq "caps of 1: no temporary file left" "" "$(ls "$TMPD" | grep 'cap.json.tmp' || true)"
        mkdir -p "$TMPD/bad"
        expect_fail "--stacks in a missing directory" 4 "cannot write the folded stacks $TMPD/bad/none/s.folded: its directory does not exist" \
            "$TRACER" trace --pid "$sp" --mode sampling --stacks "$TMPD/bad/none/s.folded" -o "$TMPD/bad/r.json" --duration 1s
        check_eq "--stacks refused: nothing left behind (no report, no temporary)" "" "$(ls -A "$TMPD/bad")"
        # -o's JSON and report.html: checked before anything is attached too (exit 4, as the
        # other modes), not found missing when the capture is over
        expect_fail "-o report.html in a missing directory" 4 "cannot write the HTML report $TMPD/bad/none/r.html: its directory does not exist" \
            "$TRACER" trace --pid "$sp" --mode sampling -o "$TMPD/bad/none/r.html" --duration 5s
        expect_fail "-o report.json in a missing directory" 4 "cannot write the report $TMPD/bad/none/r.json: its directory does not exist" \
            "$TRACER" trace --pid "$sp" --mode sampling -o "$TMPD/bad/none/r.json" --duration 5s
        check_flight "$sp"
    fi
    stop_pid "$sp"
    [ -s "$j" ] || { not_ok "$v: no report"; cat "$TMPD/tr.$v.err"; return; }
    check_eq "$v: mode sampling, 0 uprobes" "sampling 0" "$(jqr "$j" '"\(.mode) \(.capture.uprobes)"')"
    check_eq "$v: the hog's long polls, all with cpu_hog_compute hottest" true \
        "$(jqr "$j" '[.findings[] | select(.seen_as == "on_cpu" and (.future_type | test("cpu_hog_compute")))] | length > 0 and all(.hottest_frame | test("cpu_hog_compute"))')"
    check_eq "$v: on-CPU long polls state their bounds from the period" true \
        "$(jq --argjson p "$(jqr "$j" .capture.period_ns)" '[.findings[] | select(.seen_as == "on_cpu")] | all(.min_ns == (.samples - 1) * $p and .max_ns == (.samples + 1) * $p and (.duration_note | test("sample period")))' "$j")"
    # a sleep whose user stack could not be read has no frame (null: unknown), never another one
    check_eq "$v: the blocking call's long polls: blocked in its sleep, in legacy_sync_lookup" true \
        "$(jqr "$j" '[.findings[] | select(.seen_as == "blocked" and (.future_type | test("blocking_call_in_async")))] | length > 0 and all((.syscall | test("nanosleep")) and (.hottest_frame == null or (.hottest_frame | test("legacy_sync_lookup"))) and .off_cpu_ns >= 45000000) and any(.hottest_frame != null)')"
    check_eq "$v: every long poll names its task (Tokio's thread-local id), one task per hog" true \
        "$(jqr "$j" '(.findings | all(.task > 0)) and ([.findings[] | select(.seen_as == "on_cpu") | .task] | length == (unique | length))')"
    check_eq "$v: no finding of another future type (healthy tasks)" "" \
        "$(jqr "$j" '.findings[] | select(.future_type | test("cpu_hog_compute|blocking_call_in_async") | not) | .future_type' | sort -u)"
    check_eq "$v: cpu_hog_compute's hottest frame is its own" true \
        "$(jqr "$j" '[.future_types[] | select(.type | test("cpu_hog_compute"))][0].hottest_frames[0].frame | test("cpu_hog_compute")')"
    check_eq "$v: not_seen names wakes, waker counts, spawn sites, scheduling delay, pending times" true \
        "$(jqr "$j" '.not_seen | has("wakes") and has("waker_counts") and has("spawn_sites") and has("scheduling_delay") and has("pending_times")')"
    echo "# $v: $(jqr "$j" '.attribution | del(.rule) | tostring')"
    # the workers park in their loops' blocking tasks: told to the BPF side, which then records
    # their sleeps without the stack scan (docs/sampling-mode.md); the blocked long polls above
    # are still found, with their stacks
    echo "# $v: blocking task ids $(jqr "$j" '.capture | "\(.blocking_task_ids) (errors \(.blocking_task_id_errors)), sleeps in them \(.sleeps_in_blocking_tasks) of \(.sleeps)"')"
    check_eq "$v: the 2 worker loops' ids told (at least 2, none refused), sleeps in them recorded without a scan" true \
        "$(jqr "$j" '.capture | .blocking_task_ids >= 2 and .blocking_task_id_errors == 0 and .sleeps_in_blocking_tasks > 0 and .sleeps_in_blocking_tasks < .sleeps')"
    [ "${#live[@]}" -eq 0 ] || { check_live "$v" "$j"; check_remote_write "$v" "$j" "$sp"; }
    [ "$v" = 1.53 ] && check_profiles "$j"
    check_heat "$v" "$j"
    [ "$v" != 1.53 ] || check_html "$v" "$j" "$TMPD/s$v.html"
    # the kit's build has frame pointers: every poll frame from the frame walk
    if [ -n "${2:-}" ]; then
        check_eq "$v: frame pointers: no stack scan, no poll frame from it" "false 0" \
            "$(jqr "$j" '"\(.capture.stack_scan) \(.attribution.poll_frame_by_stack_scan)"')"
    else
        check_eq "$v: no frame pointers: the stack scan runs" true "$(jqr "$j" .capture.stack_scan)"
    fi
}

prom_receiver_init  # the receiver of the 1.53 stock run's --remote-write
prom_up sampling
run_line 1.53
stop_pid "$PROM"
run_line 1.24
run_line 1.43
run_line 1.53 usdt

BIN=$(sample_bin 1.53 stock)
# short polls back to back: no long poll (the intent's list)
yield_line() {  # yield_line NAME WORKLOAD-ARGS...
    local n=$1 j="$TMPD/y$1.json" yp
    shift
    start_bg "yw.$n" "$BIN" yield-workload --tasks 1000 --yields 100000000 "$@"
    yp=$BG_PID
    wait_exec "$yp" "$BIN"
    "$TRACER" trace --pid "$yp" --mode sampling --profile-hz 499 --long-poll-threshold 5ms --duration 3s -o "$j" > "$TMPD/yt.$n.out" 2> "$TMPD/yt.$n.err"
    check_eq "yield workload, $n: tracer exit 0" 0 "$?"
    stop_pid "$yp"
    echo "# yield workload, $n: $(jqr "$j" '.attribution | del(.rule) | tostring')"
    check_eq "yield workload, $n: samples in poll bodies and outside them (the case is exercised)" true \
        "$(jqr "$j" '.attribution.in_async_poll >= 20 and .attribution.outside_poll_body >= 20')"
    check_eq "yield workload, $n: no long_poll of 100 ns polls" "" "$(jqr "$j" '.findings[] | "\(.seen_as) \(.task) \(.samples)"')"
}
yield_line current_thread --current-thread
yield_line two_workers --workers 2

# refusals
cp "$BIN" "$TMPD/stripped" && strip "$TMPD/stripped"
start_bg svc.strip "$TMPD/stripped" serve --workers 2 --duration 20s
SP=$BG_PID
printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' > "$TMPD/notokio.c"
cc -o "$TMPD/notokio" "$TMPD/notokio.c" || die_test "cc failed"
start_bg nontokio "$TMPD/notokio"
NP=$BG_PID
sleep 0.5
expect_fail "a stripped copy" 2 "stripped" "$TRACER" trace --pid "$SP" --mode sampling --duration 1s
expect_fail "a process with no Tokio" 2 "no Tokio" "$TRACER" trace --pid "$NP" --mode sampling --duration 1s
expect_fail "no --pid" 3 "give --pid" "$TRACER" trace --binary "$BIN" --mode sampling --duration 1s
stop_pid "$SP"
stop_pid "$NP"
finish
