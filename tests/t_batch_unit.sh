#!/bin/bash
# Intent: batched capture's decode stage (tracer/decode/batch.c) is right without BPF, on synthetic
# batches laid out as PROBES.md "Batch format" says: poll records become begin/yields/end (the
# notified yield after result 2), events of several threads come out in time order and only once
# every thread is complete past them, a poll seen in progress gets its begin once, waker clones
# and drops land on the safe side of their thread's stamps, an earlier capture's batch and records
# after the cutoff are left out (with their counts), sequence gaps and malformed batches and
# records are counted, spawn strings come from the batch / the process / count as missing, a
# sweep's records are not decoded twice, a thread found gone is declared so only once the ring
# has been read past that moment, TSC stamps convert through clock pairs.
. "$(dirname "$0")/lib.sh"
unit_test batch_test valgrind
finish
