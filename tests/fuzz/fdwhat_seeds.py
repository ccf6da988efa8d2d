#!/usr/bin/env python3
"""fdwhat_seeds.py DIR: writes seeds for fuzz_fdwhat (tests/fuzz/fuzz_fdwhat.c, whose top comment
is the format) from this process's own /proc, so that the fuzzer starts from what the kernel
writes: an epoll fd with a TCP listener, a connected TCP pair, a UDP socket, a unix listener
bound to a path holding a newline, a pipe and a file registered, their fdinfo and the socket
tables as read (the unix table cut to the entries of this process's sockets and a few others).
Also: every fd of the seed with a made-up path, and an empty input."""
import os
import select
import socket
import sys
import tempfile


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp()
    ep = select.epoll()
    lis = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lis.bind(("127.0.0.1", 0))
    lis.listen()
    cli = socket.create_connection(lis.getsockname())
    srv, _ = lis.accept()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    ux = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ux.bind(os.path.join(tmp, "s\nock"))
    ux.listen()
    r, w = os.pipe()
    socks = [lis, cli, srv, udp, ux]
    for i, s in enumerate(socks):
        ep.register(s.fileno(), select.EPOLLIN | (select.EPOLLOUT if i % 2 else 0))
    ep.register(r, select.EPOLLIN)
    fds = [ep.fileno()] + [s.fileno() for s in socks] + [r, w]
    links = "".join("%d %s\n" % (fd, os.readlink("/proc/self/fd/%d" % fd)) for fd in fds)
    fdinfo = open("/proc/self/fdinfo/%d" % ep.fileno()).read()
    inodes = {os.readlink("/proc/self/fd/%d" % fd)[8:-1] for fd in fds}

    def table(name, keep_all=False):
        lines = open("/proc/self/net/" + name).read().splitlines(True)
        if keep_all or len(lines) < 40:
            return "".join(lines)
        mine = [l for l in lines[1:] if any(" %s " % i in l or l.rstrip().endswith(" " + i) for i in inodes)]
        return "".join(lines[:1] + mine + lines[1:6])

    parts = [links, fdinfo] + [table(t) for t in ("tcp", "tcp6", "udp", "udp6", "unix")]
    seeds = {
        "real": "%%\n".join(parts),
        "paths": "%%\n".join(["".join("%d /made/up/%d\n" % (fd, fd) for fd in fds)] + parts[1:]),
        "empty": "",
    }
    for name, text in seeds.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    for s in socks:
        s.close()
    os.unlink(os.path.join(tmp, "s\nock"))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
