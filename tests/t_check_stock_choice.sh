#!/bin/bash
# Intent: for a Tokio build without usable probes, `check` explains the choice between
# --mode sampling and the uprobe fallback — what each sees and misses, their costs as make bench
# measured them — and recommends the one this binary allows, by the task-id slot first:
# (1) the stock sample (1.53), as a file and as a running process (-p): the slot is located,
#     sampling is possible and recommended, the fallback possible too; text and JSON agree.
# (2) a stock stand-in whose slot is not found (fixtures/notes/tokio_stock: raw::poll, no
#     thread-locals): sampling is not possible, its reason is the slot's (task_id_slot.reason),
#     the fallback is recommended.
# (3) a stripped copy of the stock sample: neither (both reasons say stripped), none recommended;
#     run as a process, check -p's reason for sampling is trace --mode sampling's own refusal.
#     Without the permissions (as nobody), neither either, for that reason.
# (4) the usdt sample and a fixture of another dialect: the USDT probes are used, said so, and
#     neither mode is explained.
# (5) every figure the costs quote is in the README's "What tracing costs" section.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/notes_lib.sh"
. "$(dirname "$0")/trace_lib.sh"
need_root
need_fixtures tokio_stock tokio_upstream
need_sample 1.53 stock; stock=$SAMPLE
need_sample 1.53 usdt; usdt=$SAMPLE

wp() { jq -r "$2" "$TMPD/$1.json"; }
checks() {  # checks NAME ARGS…: check --json and the text of ARGS into $TMPD/NAME.{json,txt}
    local name=$1; shift
    timeout 60 "$TRACER" check --json "$@" > "$TMPD/$name.json" 2> "$TMPD/$name.err"
    timeout 60 "$TRACER" check "$@" > "$TMPD/$name.txt" 2>> "$TMPD/$name.err"
    jq -e .without_probes "$TMPD/$name.json" > /dev/null || not_ok "$name: check --json has without_probes: $(head -2 "$TMPD/$name.err")"
}

# ---- (1) the stock sample: slot located → sampling -------------------------------------------
checks stock "$stock"
start_bg svc "$stock" serve --workers 1
SP=$BG_PID
wait_for_line "$TMPD/svc.out" '^listening on ' 30 || die_test "stock service listening: $(cat "$TMPD/svc.err")"
checks stockpid -p "$SP"
for n in stock stockpid; do
    check_eq "$n: slot located, both modes possible, sampling recommended" "code true true true sampling" \
        "$(wp $n '"\(.task_id_slot.method) \(.without_probes.applies) \(.without_probes.sampling.possible) \(.without_probes.uprobe_fallback.possible) \(.without_probes.recommended)"')"
    check_eq "$n: the verdict is still trace's default, the fallback (exit 1)" "uprobe-fallback 1" "$(wp $n '"\(.mode) \(.exit_code)"')"
    check_eq "$n: sampling misses what its report's not_seen lists" "wakes waker_counts spawn_sites scheduling_delay pending_times poll_counts" \
        "$(wp $n '.without_probes.sampling.not_seen | join(" ")')"
    check "$n: the fallback misses spawn locations and live waker counts" \
        jq -e '.without_probes.uprobe_fallback.not_seen | (any(test("^spawn locations")) and any(test("live waker counts")))' "$TMPD/$n.json"
    check "$n: each cost is a make bench measurement" \
        jq -e '[.without_probes.sampling.cost, .without_probes.uprobe_fallback.cost] | all(test("measured by make bench"))' "$TMPD/$n.json"
    check "$n: the text explains both and recommends sampling" grep -q "^  recommended: sampling — " "$TMPD/$n.txt"
    for l in "^Without probes: --mode sampling or the uprobe fallback$" "^  sampling (--pid PID --mode sampling): possible$" \
             "^  uprobe fallback (--mode uprobe; .*): possible$" \
             "^    not:   wakes, waker counts, spawn sites, scheduling delay, pending times, poll counts$"; do
        check "$n: the text has /$l/" grep -q "$l" "$TMPD/$n.txt"
    done
    check_eq "$n: the text quotes the JSON's costs" "$(wp $n '.without_probes.sampling.cost, .without_probes.uprobe_fallback.cost')" \
        "$(sed -n 's/^    cost:  //p' "$TMPD/$n.txt")"
done

# ---- (2) no slot → the fallback --------------------------------------------------------------
checks noslot "$FX/tokio_stock"
check_eq "no slot: sampling not possible, the fallback recommended" "none false true uprobe-fallback" \
    "$(wp noslot '"\(.task_id_slot.method) \(.without_probes.sampling.possible) \(.without_probes.uprobe_fallback.possible) \(.without_probes.recommended)"')"
check_eq "no slot: sampling's reason is the slot's" "Tokio's thread-local task id was not found: $(wp noslot .task_id_slot.reason)" \
    "$(wp noslot .without_probes.sampling.reason)"
check "no slot: the text recommends the fallback" grep -q "^  recommended: uprobe-fallback — sampling is not possible here" "$TMPD/noslot.txt"

# ---- (3) stripped: neither; check -p and trace --mode sampling refuse alike -------------------
strip -o "$TMPD/stripped" "$stock"
checks stripped "$TMPD/stripped"
check_eq "stripped: neither possible, none recommended, exit 2" "false false none 2" \
    "$(wp stripped '"\(.without_probes.sampling.possible) \(.without_probes.uprobe_fallback.possible) \(.without_probes.recommended) \(.exit_code)"')"
check "stripped: both reasons say stripped" jq -e '.without_probes | [.sampling.reason, .uprobe_fallback.reason] | all(test("stripped"))' "$TMPD/stripped.json"
start_bg ssvc "$TMPD/stripped" serve --workers 1
SSP=$BG_PID
wait_for_line "$TMPD/ssvc.out" '^listening on ' 30 || die_test "stripped service listening: $(cat "$TMPD/ssvc.err")"
checks strippedpid -p "$SSP"
rc=$(timeout 60 "$TRACER" --pid "$SSP" --mode sampling --duration 1s -q -o "$TMPD/t.json" > /dev/null 2> "$TMPD/t.err"; echo $?)
check_eq "stripped process: trace --mode sampling refuses (exit 2)" 2 "$rc"
check_eq "stripped process: check -p's reason is trace's refusal" "$(sed 's/^tokio-ebpf-trace: --mode sampling: //' "$TMPD/t.err")" \
    "$(wp strippedpid .without_probes.sampling.reason)"

# without the permissions: neither, for that reason
chmod 755 "$TMPD"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- \
    "$TRACER" check --json "$stock" > "$TMPD/nobody.json" 2> /dev/null
check_eq "no permissions: neither possible, none recommended" "false false none" \
    "$(wp nobody '"\(.without_probes.sampling.possible) \(.without_probes.uprobe_fallback.possible) \(.without_probes.recommended)"')"
check "no permissions: both reasons are the permissions' (kernel.permissions.problem)" \
    jq -e '.kernel.permissions.problem as $p | $p != null and .without_probes.sampling.reason == $p and .without_probes.uprobe_fallback.reason == $p' "$TMPD/nobody.json"

# ---- (4) USDT probes: used, neither mode explained --------------------------------------------
checks usdt "$usdt"
checks upstream "$FX/tokio_upstream"
for n in usdt upstream; do
    check_eq "$n: recommended usdt, not applicable, no mode explained" "usdt false null null" \
        "$(wp $n '"\(.without_probes.recommended) \(.without_probes.applies) \(.without_probes.sampling) \(.without_probes.uprobe_fallback)"')"
    check "$n: the text says the USDT probes are used" grep -q "^Without probes: not needed — the Tokio USDT probes are used" "$TMPD/$n.txt"
    check "$n: the text explains neither mode" bash -c "! grep -q '^  sampling (\|^  recommended:' '$TMPD/$n.txt'"
done

# ---- (5) the figures are the README's --------------------------------------------------------
sed -n '/^## What tracing costs/,/^## /p' "$ROOT/README.md" > "$TMPD/costs.md"
wp stock '.without_probes.sampling.cost, .without_probes.uprobe_fallback.cost' | grep -oE '[0-9]+(\.[0-9]+)?(×| %)' | sort -u > "$TMPD/figs"
check "the costs quote figures ($(paste -sd, "$TMPD/figs"))" test "$(wc -l < "$TMPD/figs")" -ge 4
while IFS= read -r f; do
    check "figure $f is in the README's What tracing costs" grep -qF -- "$f" "$TMPD/costs.md"
done < "$TMPD/figs"
finish
