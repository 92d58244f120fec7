#!/usr/bin/env python3
"""refusing_rtmp_server.py: an RTMP server that refuses, with terminal escapes in what it says.

A stand-in for a hostile or broken ingest server (nginx-rtmp's own descriptions are fixed texts):
it accepts one connection on 127.0.0.1, does the RTMP handshake, and refuses the publisher in one
of two ways, each text holding ESC[2J (clear the screen) and ESC]0;...BEL (retitle the window):

    refusing_rtmp_server.py --mode connect|publish

  connect   answers `connect` with `_error` {level error, code NetConnection.Connect.Rejected...,
            description ...}
  publish   accepts `connect` and `createStream`, then answers `publish` with `onStatus` {level
            error, code NetStream.Publish.Failed..., description ...}

It prints "listening PORT" once ready, serves one client, and exits. Python 3, standard library.
"""
import argparse
import os
import socket
import struct
import sys

ESCAPES = '\x1b[2J\x1b]0;owned by a server\x07'


def amf_string(text):
    data = text.encode()
    return b'\x02' + struct.pack('>H', len(data)) + data


def amf_number(value):
    return b'\x00' + struct.pack('>d', value)


def amf_object(fields):
    out = b'\x03'
    for key, value in fields:
        k = key.encode()
        out += struct.pack('>H', len(k)) + k + value
    return out + b'\x00\x00\x09'


AMF_NULL = b'\x05'


def amf_head(payload):
    """The command's name and transaction id (the first two AMF0 values)."""
    if len(payload) < 3 or payload[0] != 0x02:
        return None, 0.0
    n = struct.unpack_from('>H', payload, 1)[0]
    name = payload[3:3 + n].decode(errors='replace')
    rest = payload[3 + n:]
    tx = struct.unpack_from('>d', rest, 1)[0] if len(rest) >= 9 and rest[0] == 0x00 else 0.0
    return name, tx


class Chunks:
    """Reads RTMP messages off a socket (any chunk size, any header form)."""

    def __init__(self, sock):
        self.sock, self.size, self.streams = sock, 128, {}

    def read(self, n):
        data = b''
        while len(data) < n:
            more = self.sock.recv(n - len(data))
            if not more:
                raise EOFError
            data += more
        return data

    def message(self):
        while True:
            first = self.read(1)[0]
            fmt, csid = first >> 6, first & 0x3F
            if csid == 0:
                csid = 64 + self.read(1)[0]
            elif csid == 1:
                b = self.read(2)
                csid = 64 + b[0] + 256 * b[1]
            s = self.streams.setdefault(csid, dict(length=0, type=0, stream=0, ts=0, data=b''))
            if fmt <= 2:
                h = self.read(11 if fmt == 0 else 7 if fmt == 1 else 3)
                ts = int.from_bytes(h[0:3], 'big')
                if fmt <= 1:
                    s['length'], s['type'] = int.from_bytes(h[3:6], 'big'), h[6]
                if fmt == 0:
                    s['stream'] = int.from_bytes(h[7:11], 'little')
                if ts == 0xFFFFFF:
                    self.read(4)
            take = min(self.size, s['length'] - len(s['data']))
            s['data'] += self.read(take)
            if len(s['data']) >= s['length']:
                kind, payload, s['data'] = s['type'], s['data'], b''
                if kind == 1:
                    self.size = struct.unpack('>I', payload[:4])[0] & 0x7FFFFFFF
                    continue
                return kind, payload


def send(sock, kind, payload, stream=0, csid=3):
    """One message in 128-byte chunks: a type-0 header, then type-3 headers."""
    out = bytes([csid]) + b'\x00\x00\x00' + len(payload).to_bytes(3, 'big') + bytes([kind]) + stream.to_bytes(4, 'little')
    for i in range(0, len(payload), 128):
        if i:
            out += bytes([0xC0 | csid])
        out += payload[i:i + 128]
    sock.sendall(out)


def serve(sock, mode):
    c0c1 = Chunks(sock).read(1537)
    sock.sendall(b'\x03' + bytes(1536) + c0c1[1:])  # S0, S1, S2 (S2 echoes C1)
    chunks = Chunks(sock)
    chunks.read(1536)  # C2
    while True:
        kind, payload = chunks.message()
        if kind != 20:
            continue
        name, tx = amf_head(payload)
        if name == 'connect':
            if mode == 'connect':
                send(sock, 20, amf_string('_error') + amf_number(tx) + AMF_NULL + amf_object([
                    ('level', amf_string('error')), ('code', amf_string('NetConnection.Connect.Rejected' + ESCAPES)),
                    ('description', amf_string('go away ' + ESCAPES))]))
                return
            send(sock, 20, amf_string('_result') + amf_number(tx) + amf_object([('fmsVer', amf_string('FMS/3,0,1,123'))])
                 + amf_object([('level', amf_string('status')), ('code', amf_string('NetConnection.Connect.Success'))]))
        elif name == 'createStream':
            send(sock, 20, amf_string('_result') + amf_number(tx) + AMF_NULL + amf_number(1))
        elif name == 'publish':
            send(sock, 20, amf_string('onStatus') + amf_number(0) + AMF_NULL + amf_object([
                ('level', amf_string('error')), ('code', amf_string('NetStream.Publish.Failed' + ESCAPES)),
                ('description', amf_string('no publishing here ' + ESCAPES))]), stream=1, csid=5)
            return


def main():
    ap = argparse.ArgumentParser(description='An RTMP server that refuses, with terminal escapes in its texts.')
    ap.add_argument('--mode', choices=('connect', 'publish'), required=True)
    a = ap.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    print('listening', listener.getsockname()[1], flush=True)
    listener.settimeout(60)
    sock, _ = listener.accept()
    sock.settimeout(20)
    try:
        serve(sock, a.mode)
        # let the client read the answer before the connection goes
        sock.shutdown(socket.SHUT_WR)
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
    except (EOFError, OSError) as e:
        print('refusing_rtmp_server: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
