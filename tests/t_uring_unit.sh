#!/bin/bash
# Intent: io_uring request tracking (tracer/analyze/uring.c) is right without BPF, on synthetic
# TET_REC_URING_* records and task wakes/polls: a poll's SQ range links the submissions at its
# positions to its task whether the range comes before the submission (submitted at park) or
# after it (submitted inside the poll); a submission no range covers still links within 2 s and
# is unattributed after that, never earlier (also when the tick's clock is at or behind its
# stamp); u32 SQ positions wrap; a completion takes the oldest request in flight with its
# (ring, user_data), IORING_CQE_F_MORE keeps it in flight, completions without a submission are
# counted; the task's first wake and first poll beginning at or after the completion are linked
# (consume delay into consume_ns once globally and once for the site; an earlier poll does not
# consume it; unconsumed after 10 s, not earlier); per-site figures through the site callback;
# ur_finish lists the requests in flight with fds described through the fd callback (never a
# registered file), ur_task_inflight filters by task; the timeline ring wraps; ur_active stays
# false until a ring is seen; short and unknown records give -EINVAL and count as bad. The same
# binary under valgrind: no invalid access, no leak.
. "$(dirname "$0")/lib.sh"
unit_test uring_test valgrind
finish
