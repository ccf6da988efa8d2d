#!/bin/bash
# Intent: the tracer's reads of a traced process's memory cannot be held by the process
# (tracer/lib/pmem.c, tests/unit/pmem_test.c): against a child that keeps a page behind a
# userfaultfd it never serves, each read of the page gives up after the timeout, at most 4 reader
# threads stay held and every later read is refused at once; ordinary reads return the child's
# bytes (one longer than a request split and whole), an unmapped address is -EFAULT; all of it
# counted; when the child dies the held readers end. Root (userfaultfd for the child).
. "$(dirname "$0")/lib.sh"
need_root
unit_test pmem_test
finish
