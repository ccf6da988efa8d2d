#!/bin/bash
# Intent: the report's documented limits say what they left out (docs/report-schema.md, totals
# and spawn_sites; docs/cli.md, --task-records), on workloads past them, checked against the
# counts doc_tokio (tests/fixtures/trace/doc_tokio.c) printed of what it emitted:
#   - findings past the analyzer's finding limit: 10100 tasks each with one 50 µs poll, traced
#     with --long-poll-threshold 1us: every one is a long_poll, so findings listed +
#     `findings_omitted` = 10100, `findings_omitted` > 0, `totals.findings` = the findings listed,
#     the terminal says how many were not recorded; and --task-records' default (10000
#     terminated tasks listed): 10000 listed, `task_records_omitted` = 100;
#   - spawn sites past the site limit (65536): 65600 tasks at 65600 distinct spawn lines: the
#     first 65536 locations keep their own sites, the 64 beyond share one site flagged
#     `overflow_site`, location null (all listed: --sites 70000; the default 10000 and what it
#     omits are t_hostile's); every task is counted at some site; --task-records 0
#     lists no terminated task but those with a finding, which docs/cli.md says are always
#     kept (`task_records_omitted` = 65600 − those; each task polls once for microseconds, but
#     without the sched programs a poll the machine stalled (steal, preemption) past 10 ms is
#     a long_poll, as a fresh-clone run saw once), and every finding's task is listed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_tracer
DOC_FX="$BUILD/fixtures/doc_tokio"
need_file "$DOC_FX" "fixture doc_tokio"
command -v python3 > /dev/null || die_test "python3 needed"

# capture_doc NAME "FIXTURE ARGS" TRACER ARGS…: doc_tokio traced from before its workload to
# its end. Sets R (report), E (fixture output), S (terminal summary).
capture_doc() {
    local name=$1 fxargs=$2 fpid tpid
    shift 2
    R="$TMPD/$name.json" E="$TMPD/$name.fx.out" S="$TMPD/$name.tr.out"
    rm -f "$TMPD/$name.go"
    # shellcheck disable=SC2086
    start_bg "$name.fx" "$DOC_FX" $fxargs --go "$TMPD/$name.go" --hold
    fpid=$BG_PID
    wait_for_line "$E" '^pid ' 10 || { not_ok "$name: fixture started"; return 1; }
    start_bg "$name.tr" "$TRACER" --pid "$fpid" -o "$R" "$@"
    tpid=$BG_PID
    if ! wait_for_line "$TMPD/$name.tr.err" 'attached' 30; then
        not_ok "$name: tracer attached"; cat "$TMPD/$name.tr.err"; stop_pid "$fpid"; return 1
    fi
    touch "$TMPD/$name.go"
    wait_for_line "$E" '^done$' 60 || not_ok "$name: fixture finished"
    sleep 0.2
    kill -INT "$tpid"
    wait_exit "$tpid" 90
    stop_pid "$fpid"
    check_eq "$name: tracer exit 0" 0 "$RC"
    # one read of the report (tens of MB for sites: seconds of jq a read on a loaded machine)
    local drops polls
    read -r drops polls < <(jq -r '"\(.totals.drops) \(.totals.polls)"' "$R")
    check_eq "$name: no events dropped (the figures below are exact)" 0 "$drops"
    check_eq "$name: totals.polls = emitted" "$(expect_of "$E" polls)" "$polls"
}

# ==== findings past the limit
N=10100
capture_doc findings "--findings $N" --long-poll-threshold 1us --detect long_poll
read -r listed omitted total lp terminated recs_omitted <<< "$(jq -r '"\(.findings | length) \(.totals.findings_omitted) \(.totals.findings) \([.findings[] | select(.kind == "long_poll")] | length) \([.tasks[] | select(.state == "terminated")] | length) \(.totals.task_records_omitted)"' "$R")"
check_eq "findings: fixture emitted $N tasks with one poll each" "$N $N" \
    "$(expect_of "$E" spawns) $(sed -n 's/^count many polls=\([0-9]*\) .*/\1/p' "$E")"
check_eq "findings: listed + findings_omitted = $N (one long_poll per task)" "$N" "$((listed + omitted))"
check "findings: findings_omitted > 0 (the limit was reached): $omitted" test "$omitted" -gt 0
check_eq "findings: totals.findings = the findings listed, all long_poll" "$listed $listed" "$total $lp"
check "findings: the terminal says $omitted were not recorded" \
    grep -q "($omitted more not recorded: finding limit reached)" "$S"
check_eq "findings: --task-records default: 10000 terminated tasks listed" 10000 "$terminated"
check_eq "findings: task_records_omitted = $N − 10000" "$((N - 10000))" "$recs_omitted"

# ==== spawn sites past the site limit
M=65600
capture_doc sites "--sites $M" --task-records 0 --sites 70000 --ringbuf-size 256M --probes spawn,poll,terminate --no-sched
check_eq "sites: fixture emitted $M spawns" "$M" "$(expect_of "$E" spawns)"
check_eq "sites: the report's sites: 65536 own + 1 overflow_site (location null) holding the 64 tasks beyond, every task counted; --task-records 0: terminated tasks listed are those with a finding, and only they (task_records_omitted = $M − them)" \
    "sites=65537 overflow=1 own_one_task=65536 overflow_site=location:None,tasks:64,polls:64 sum_tasks=$M listed_without_finding=0 finding_tasks_unlisted=0 omitted+listed=$M" \
    "$(python3 - "$R" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["spawn_sites"]
ov = [x for x in s if x["overflow_site"]]
own = [x for x in s if not x["overflow_site"] and x["location"] and x["tasks"] == 1]
o = ",".join(f"location:{x['location']},tasks:{x['tasks']},polls:{x['polls']}" for x in ov)
term = {(t["pid"], t["task_id"]) for t in d["tasks"] if t["state"] == "terminated"}
fnd = {(f["pid"], f["task_id"]) for f in d["findings"]}
for f in d["findings"][:5]:
    print(f"finding: {f['kind']} task {f['task_id']}: {f['detail']}", file=sys.stderr)
print(f"sites={len(s)} overflow={len(ov)} own_one_task={len(own)} overflow_site={o} "
      f"sum_tasks={sum(x['tasks'] for x in s)} listed_without_finding={len(term - fnd)} "
      f"finding_tasks_unlisted={len(fnd - term)} "
      f"omitted+listed={d['totals']['task_records_omitted'] + len(term)}")
PY
)"
recs_omitted=$(jq .totals.task_records_omitted "$R")
check "sites: --task-records 0 still left out nearly all of the $M terminated tasks (task_records_omitted ≥ $M − 100): $recs_omitted" \
    test "$recs_omitted" -ge $((M - 100))
finish
