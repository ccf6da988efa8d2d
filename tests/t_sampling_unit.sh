#!/bin/bash
# Intent: adaptive sampling's rule raises the rate by the power of two that keeps the ring from
# filling within a second, leaves a draining ring alone, raises on lost batches and on the
# tracer's CPU over its budget, lowers after 2 s of calm (never under the floor, never raised
# within 50 ms of a lowering); the analyzer, told the rates and the gaps, follows whole tasks
# only: a raise sets aside exactly the tasks the process's hash leaves out, a task met later is
# followed only if recorded all along, a gap sets aside every task alive in it
# (tests/unit/sampling_test.c).
. "$(dirname "$0")/lib.sh"
unit_test sampling_test
finish
