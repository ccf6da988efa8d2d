#!/bin/bash
# Intent: batched capture's decode stage and the analyzer it feeds survive a bounded libFuzzer run
# (ASan + UBSan, default 12 s, BATCH_FUZZ_TIME to change) in which everything the traced process
# controls — heads, records, open polls, strings, sequence numbers, stamps, the buffers read in
# place — comes from the input (tests/fuzz/fuzz_batch.c; seeds: tests/fuzz/batch_seeds.py, well-formed
# captures of each shape). The kept crashers (tests/fixtures/batch/crashers) run first, each
# alone; every seed decodes what it was built to hold (a seed that no longer reaches the decoder
# would make the run shallow). A crash fails the test and leaves the input in build/fuzz/artifacts/
# (keep it under tests/fixtures/batch/crashers/). Prints execs/s, total execs and coverage.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz_batch"; SEEDS="$BUILD/fuzz/batch-seeds"; CRASHERS="$ROOT/tests/fixtures/batch/crashers"
[ -x "$FUZZ" ] && [ -e "$SEEDS/.done" ] || die_test "$FUZZ or its seeds missing: run 'make'"
fuzz_crashers "$FUZZ" "$CRASHERS"
# seed → what it must reach: "batches records events sweep_records vanished strings after_cutoff polls"
declare -A WANT=([polls]="2 9 9 0 0 2 0 2" [waits]="3 8 10 0 0 0 0 2" [tsc]="1 1 3 0 0 0 0 2"
                 [sweep]="2 2 4 4 1 0 0 2" [cutoff]="2 2 2 0 0 0 2 1")
for s in "${!WANT[@]}"; do
    got=$(FUZZ_BATCH_VERBOSE=1 "$FUZZ" "$SEEDS/$s" 2>/dev/null | grep -m1 '^batches=' |
          sed -E 's/^batches=([0-9]+) records=([0-9]+) events=([0-9]+) .*sweep_records=([0-9]+) vanished=([0-9]+) strings=([0-9]+) after_cutoff=([0-9]+) polls=([0-9]+) .*/\1 \2 \3 \4 \5 \6 \7 \8/')
    check_eq "seed $s decodes what it holds (batches records events sweep_records vanished strings after_cutoff polls)" "${WANT[$s]}" "$got"
done
mkdir -p "$TMPD/corpus"
fuzz_bounded "$FUZZ" "${BATCH_FUZZ_TIME:-12}" "$TMPD/corpus" "$SEEDS" "$CRASHERS"
finish
