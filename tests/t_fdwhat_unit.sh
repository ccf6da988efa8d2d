#!/bin/bash
# Intent: epoll tokens come back as the fds a process registered under them, and those fds as
# what they are, from /proc alone (tracer/decode/fdwhat.c), on real fds the test creates, with the
# addresses checked against getsockname/getpeername: each token gives its fd and events mask
# (64-bit token too; of a token in two epoll fds the lower-numbered wins; 600 registrations
# read back whole); unknown or closed-since tokens give -ENOENT; TCP listener on 127.0.0.1 and
# [::1] (when IPv6 is there), both ends of a connection in order with ESTABLISHED, UDP, a unix
# socket bound to a path with a newline, a quote and 0xff (escaped as \xNN, listening), an
# unnamed one, one another socket's abstract name forges a /proc/net/unix line for ("name
# ambiguous"), pipe, regular file, eventfd, epoll fd; the kind of each; escaping of control
# bytes, ill-formed UTF-8, C1 controls and bidi overrides, never cutting a character; small
# buffers get a NUL-terminated prefix; a child's listener through its token, -ESRCH from the
# child once a zombie and once reaped, -ESRCH for a PID that cannot exist. The same binary
# under valgrind: no invalid access, no leak.
. "$(dirname "$0")/lib.sh"
unit_test fdwhat_test valgrind
finish
