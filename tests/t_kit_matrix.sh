#!/bin/bash
# Intent: the kit patches every Tokio release it has sources for — here the releases that
# together take every variant of every hook point (hooks.py cover: 7, the newest among them);
# KIT_MATRIX=latest: the newest of each minor line 1.24–1.53, KIT_MATRIX=all: all 70
# (`make kit-matrix`), every check on each — and the patch is right:
# the matrix workload built by the kit carries exactly the documented probes (readelf -n), runs
# as the stock build does, and the patched Tokio built without the cfg has the same functions
# with the same sizes as the release unpatched (nm); traced in per-event capture its counts equal
# bpftrace's on the same probes of the same process, and in per-event and batched capture the
# planted long poll, stall and lost waker are found at their spawn lines (tests/kit/matrix_lib.sh).
# By default (make test) the cover alone: every variant of every hook patched, built and traced
# once, the newest also built without the cfg and unpatched and compared (t_kit_notes compares
# 1.24.2 and 1.43.1, the other Debian lines; KIT_MATRIX=cover: all of the cover); the newest of each minor line took 20 minutes
# of a fresh `make test` (31 releases) and is `KIT_MATRIX=latest make kit-matrix`.
# Builds are kept by content hash under .cache/kit-matrix. KIT_MATRIX_TRACE=0 leaves tracing out
# (the build checks alone, for a machine without BPF; never under CI=true); KIT_MATRIX_ONLY="V…"
# checks those releases alone (not under CI=true either).
# TIMEOUT: 3000
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/trace_lib.sh"
. "$(dirname "$0")/kit/matrix_lib.sh"
need_root
need_file "$TRACER" "tracer binary"
which=${KIT_MATRIX:-test}
case $which in test|cover|latest|all) ;; *) die_test "KIT_MATRIX=$which: use test, cover, latest or all";; esac
trace=${KIT_MATRIX_TRACE:-1}
if [ "$trace" != 1 ]; then skip_check "KIT_MATRIX_TRACE=$trace: releases not traced"; fi
mapfile -t ALL < <("$ROOT/tests/kit/registry.sh" --list)
[ ${#ALL[@]} -ge 70 ] || die_test "only ${#ALL[@]} releases found (../shared/tokio-src and make deps)"
mapfile -t COVER < <(km_releases cover)
[ ${#COVER[@]} -ge 2 ] || die_test "probes-patch/hooks.py cover: ${#COVER[@]} releases"
if [ "$which" = test ]; then
    mapfile -t RELEASES < <(printf '%s\n' "${COVER[@]}" | sort -uV)
else
    mapfile -t RELEASES < <(km_releases "$which")
fi
check_eq "the matrix holds the newest release with a source" "${ALL[-1]}" "$(printf '%s\n' "${RELEASES[@]}" | grep -Fx "${ALL[-1]}")"
if [ -n "${KIT_MATRIX_ONLY:-}" ]; then   # a maintainer's subset: KIT_MATRIX_ONLY="1.29.1 1.47.5"
    [ "${CI:-}" != true ] || die_test "KIT_MATRIX_ONLY is not for CI"
    read -r -a RELEASES <<< "$KIT_MATRIX_ONLY"; which="KIT_MATRIX_ONLY"
fi
declare -A FULL=()   # releases given every check; the others the kit's build, its checks, the traces
# make test: the nm comparison with stock (two more builds, ~35 s a release) on the newest of the
# cover (km_compared); KIT_MATRIX=cover compares every one of them
mapfile -t full < <(km_compared "$which" "${RELEASES[@]}")
for v in "${full[@]}"; do FULL[$v]=1; done
echo "# $which: ${#RELEASES[@]} releases: ${RELEASES[*]}; compared with stock: $(printf '%s\n' "${!FULL[@]}" | sort -V | tr '\n' ' ')"
# The next release builds while this one is checked and traced (the traced workload mostly
# sleeps): a background job per release, by PID, its outcome in $KM/V.build.
only() { [ -n "${FULL[$1]:-}" ] || echo usdt; }
prebuild() {
    ( km_build "$1" "$(only "$1")"; echo "$?|$KM_CACHED|$KM_ERR" > "$KM/$1.build" ) > "$KM/$1.build.log" 2>&1 &
    BUILD_PID=$!
    track_pid "$BUILD_PID"
}
built=0 cached=0 t0=$(date +%s) n=${#RELEASES[@]}
mkdir -p "$KM"
rm -f "$KM"/*.build
prebuild "${RELEASES[0]}"
for i in "${!RELEASES[@]}"; do
    v=${RELEASES[$i]}
    wait "$BUILD_PID"
    [ $((i + 1)) -lt "$n" ] && prebuild "${RELEASES[$((i + 1))]}"
    KW=$KM/$v
    IFS='|' read -r brc KM_CACHED KM_ERR < "$KM/$v.build" 2>/dev/null || { brc=1; KM_ERR="no outcome ($(tail -1 "$KM/$v.build.log"))"; }
    if [ "$brc" != 0 ]; then not_ok "tokio $v: builds ($KM_ERR)"; continue; fi
    if [ "$KM_CACHED" = 1 ]; then cached=$((cached+1)); else built=$((built+1)); fi
    km_check_builds "$v" "$(only "$v")"
    [ "$trace" = 1 ] && km_trace "$v"
done
echo "# built $built releases, $cached kept from an earlier run, in $(( $(date +%s) - t0 )) s"
finish
