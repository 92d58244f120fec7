#!/usr/bin/env python3
"""A listener on a Capture Link socket path, run by the tests as ANOTHER user (an attacker on the
same machine): it never answers, it only writes down what a helper sent it. Standard library only.

  foreign_pusher.py [--make-dir MODE] SOCKET_PATH LOG_FILE

--make-dir MODE first creates the socket's directory with MODE (octal, e.g. 755), as a user who
got to /tmp/livepush-<uid> before its owner would. The socket file is made 0777 so that any user
can connect. LOG_FILE gets one line per thing seen, flushed at once:

  listening PATH
  accepted uid=U pid=P           (SO_PEERCRED of whoever connected)
  datagram bytes=N type=T hello=1 (the header's magic and type; hello=1 for a HELLO)
  closed                          (the helper hung up)

It serves connections until it is killed.
"""
import os
import socket
import struct
import sys

LPC_MAGIC = 0x4C43504C
LPC_HELLO = 0x0001


def main():
    args = sys.argv[1:]
    mode = None
    if args[:1] == ["--make-dir"]:
        mode = int(args[1], 8)
        args = args[2:]
    path, log_path = args
    log = open(log_path, "a", buffering=1)
    if mode is not None:
        os.mkdir(os.path.dirname(path), mode)
        os.chmod(os.path.dirname(path), mode)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    os.chmod(path, 0o777)
    server.listen(4)
    log.write(f"listening {path}\n")
    while True:
        connection, _ = server.accept()
        pid, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        log.write(f"accepted uid={uid} pid={pid}\n")
        connection.settimeout(10)
        try:
            while True:
                data = connection.recv(65536)
                if not data:
                    log.write("closed\n")
                    break
                magic, kind = struct.unpack_from("<IH", data) if len(data) >= 6 else (0, 0)
                log.write(f"datagram bytes={len(data)} type={kind} hello={int(magic == LPC_MAGIC and kind == LPC_HELLO)}\n")
        except OSError as error:
            log.write(f"error {error}\n")
        connection.close()


if __name__ == "__main__":
    main()
