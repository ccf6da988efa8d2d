#!/bin/bash
# Intent: the flight recorder (tracer/analyze/flight.c) and the analyzer's on_detect hook that fires it
# are right without BPF, on synthetic records. Store: a time window keeps every record newer
# than the window and at most one chunk older, with memory that follows the window; a size
# window stays under its bound and keeps the newest record; a time window cut by its memory
# bound says so and until when; replay filters exactly by [from, to] and pid; a spawn record
# round-trips byte-exact (hostile bytes, over-long copy counts clamped); spawns of tasks alive at
# a window's start are replayed first (not those ended before it) and are purged once their end
# leaves the window; the spawns kept are bounded. Triggers: detector names, poll>D, sched_delay>D,
# exit, crash parse, anything else is refused with an error. Dump names: a safe alphabet, 64
# characters a part, "process" for an unusable executable name. Dump directory: the budget
# removes the oldest dumps' files only (never the one kept, other files, symlinks); the
# directory check refuses a missing path or a file and leaves no probe file. on_detect: once per
# new occurrence of each finding kind in `detect` (long_poll, stalled, lost_waker, never_yields,
# self_wake), for every poll / scheduling delay strictly above poll>D / sched_delay>D, with the
# occurrence's start, value and task, also once the findings list is full.
. "$(dirname "$0")/lib.sh"
unit_test flight_test
finish
