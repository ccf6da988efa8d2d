#!/bin/bash
# tests/kit/warm.sh — what the kit's build tests build, made ahead of them on CPU the other tests
# leave idle. tests/run.sh starts it, in a session of its own at the lowest priority (SCHED_IDLE,
# nice 19, idle I/O class), when the run holds t_kit_matrix or t_kit_notes, and stops it (TERM to
# its process group) before the first t_kit_* test: a build cut short is made again by the test
# itself, so nothing here is trusted — only the content-hash caches it fills are shared:
#  - first t_kit_notes's builds without the cfg and unpatched (1.24, 1.43): kn_build,
#    build/cargo/tokio-LINE/kitnotes (the test does nothing but build them: each build made here
#    is its time saved);
#  - then t_kit_matrix's releases (the hooks.py cover, the newest compared with stock): km_build,
#    .cache/kit-matrix;
# Its output: build/test-logs/kit-warm.log.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/matrix_lib.sh"
. "$(dirname "$0")/nocfg_lib.sh"
t0=$(date +%s)
compared=" $(km_compared test $(km_releases cover | sort -uV) | tr '\n' ' ')"
for line in "${LINES[@]}"; do
    rel=$(basename "$(kn_patched "$line")"); rel=${rel#tokio-}
    [[ "$compared" == *" $rel "* ]] && continue   # t_kit_notes leaves it to the matrix
    kn_build "$line"; rc=$?
    echo "# warm: nocfg $line: exit $rc ${KN_ERR:+($KN_ERR) }after $(( $(date +%s) - t0 )) s"
done
mapfile -t COVER < <(km_releases cover | sort -uV)
if [ ${#COVER[@]} -ge 2 ]; then
    mapfile -t full < <(km_compared test "${COVER[@]}")
    for v in "${COVER[@]}"; do
        only=usdt
        for f in "${full[@]}"; do [ "$f" = "$v" ] && only=""; done
        km_build "$v" $only; rc=$?
        echo "# warm: matrix $v: exit $rc, cached $KM_CACHED ${KM_ERR:+($KM_ERR) }after $(( $(date +%s) - t0 )) s"
    done
else
    echo "# warm: no cover (probes-patch/hooks.py cover): the matrix is left to t_kit_matrix"
fi
echo "# warm: done in $(( $(date +%s) - t0 )) s"
