"""hostile_link.py: hostile_helper.py's wire: Capture Link's constants and message layouts, and
`Link`, a session socket that sends well-formed or broken messages on purpose and reads the
pusher's answers. Python 3, standard library only.
"""
import argparse
import array
import os
import select
import signal
import socket
import struct
import sys
import time

MAGIC = 0x4C43504C
HDR = struct.Struct('<IHHII')
HELLO_S = struct.Struct('<HHIIIIIII32s16s')
WELCOME_S = struct.Struct('<HHIQQIIQQIIIIII')
FRAME_S = struct.Struct('<IIQQIIII3I3I')
AUDIO_S = struct.Struct('<IIHHIQ')
HELLO, START, FRAME, AUDIO, PAUSE, RESUME, FINISH = 1, 2, 3, 4, 5, 6, 7
FINISH_USER, FINISH_SOURCE_LOST, FINISH_DONE = 1, 3, 6
HEARTBEAT = 0x40
WELCOME, REJECT, RELEASE, CONFIG, STOP, ERROR = 0x81, 0x82, 0x83, 0x84, 0x85, 0x86
FLAG_OPTIONAL = 1
CAP_AUDIO = 1
CAP_DAMAGE = 2
BGRX, NV12 = 1, 5
S16LE = 1
FRAME_UNCHANGED = 1
FRAME_FORMAT_CHANGED = 4
ERR = dict(BAD_MAGIC=1, BAD_LENGTH=2, UNKNOWN_TYPE=3, VERSION=4, STATE=5, BAD_SLOT=6, SLOT_NOT_OWNED=7,
           SEQUENCE=8, GEOMETRY=9, FORMAT=10, DESCRIPTORS=11, TRUNCATED=12, PEER_UID=13, BUSY=14,
           TIMEOUT=15, AUDIO=16, TEXT=17, RESERVED=18)
ERR_NAME = {v: k for k, v in ERR.items()}

HELLO_MAX = (640, 360)
FRAME_W, FRAME_H = 64, 64
class Settings:
    timeout_s = 5.0  # --timeout, for the cases that run until the pusher acts (set by main)


def mono_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class SetupFailed(Exception):
    pass


class Link:
    """The helper's end of one connection, with just enough protocol to misbehave."""

    def __init__(self, path):
        self.path = path
        self.sock = None
        self.w = None
        self.seq = 0
        self.pts = 0

    # ---------------------------------------------------------------- plumbing
    def connect(self, timeout_s=10.0):
        give_up = time.monotonic() + timeout_s
        delay = 0.1
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
            try:
                s.connect(self.path)
                self.sock = s
                return
            except (FileNotFoundError, ConnectionRefusedError):
                s.close()
                if time.monotonic() >= give_up:
                    raise SetupFailed(f'no pusher is listening at {self.path}')
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def raw(self, data, fds=None):
        """Sends one datagram as is; a pusher that already closed is not an error here."""
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))] if fds else []
        try:
            self.sock.sendmsg([data], anc, socket.MSG_NOSIGNAL)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send(self, type_, payload=b'', flags=0, reserved=0, fds=None, magic=MAGIC, payload_bytes=None):
        n = len(payload) if payload_bytes is None else payload_bytes
        self.raw(HDR.pack(magic, type_, flags, n, reserved) + payload, fds)

    def next_message(self, deadline):
        """(type, payload) | ('CLOSED',) | None at the deadline. Closes received descriptors."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not select.select([self.sock], [], [], left)[0]:
                continue
            try:
                msg, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(4 * 4),
                                                   socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
            except BlockingIOError:
                continue
            except ConnectionResetError:
                # the pusher closed with our messages unread; what it queued for us follows
                continue
            fds = []
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    a = array.array('i')
                    a.frombytes(data[:len(data) - len(data) % 4])
                    fds.extend(a)
            if not msg and not fds:
                return ('CLOSED',)
            if len(msg) < 16:
                for fd in fds:
                    os.close(fd)
                return ('GARBAGE', msg)
            magic, type_, _, n, _ = HDR.unpack_from(msg)
            return (type_, msg[16:], fds)

    # ---------------------------------------------------------------- valid steps
    def hello(self, major=1, caps=0, audio_formats=0, pixel_formats=(1 << BGRX) | (1 << NV12),
              max_size=HELLO_MAX, size=80, reserved=0, name=b'hostile-helper'):
        p = HELLO_S.pack(major, 0, os.getpid(), caps, pixel_formats, audio_formats, max_size[0], max_size[1],
                         reserved, name, b'1.0.0')
        self.send(HELLO, p[:size] if size <= 80 else p + bytes(size - 80))

    def welcome(self, timeout_s=5.0):
        deadline = time.monotonic() + timeout_s
        while True:
            m = self.next_message(deadline)
            if m is None:
                raise SetupFailed('no WELCOME within %g s of HELLO' % timeout_s)
            if m[0] == 'CLOSED':
                raise SetupFailed('connection closed without ERROR (before WELCOME)')
            if m[0] == 'GARBAGE':
                raise SetupFailed('a datagram of %d bytes before WELCOME' % len(m[1]))
            type_, payload, fds = m
            if type_ == WELCOME:
                for fd in fds:
                    os.close(fd)
                if len(fds) != 1 or len(payload) != WELCOME_S.size:
                    raise SetupFailed(f'malformed WELCOME ({len(fds)} descriptors, {len(payload)} bytes)')
                f = WELCOME_S.unpack(payload)
                self.w = dict(major=f[0], minor=f[1], caps=f[2], session_id=f[3], ring_bytes=f[4], slot_count=f[5],
                              pixel_formats=f[6], slot_bytes=f[7], first_slot_offset=f[8], max_w=f[9], max_h=f[10],
                              fps=f[11])
                return
            for fd in fds:
                os.close(fd)
            if type_ in (ERROR, REJECT):
                raise SetupFailed(verdict_line(type_, payload))

    def start(self, info=b'{"source":"hostile"}'):
        self.send(START, struct.pack('<I', len(info)) + info)

    def heartbeat(self, **kw):
        self.send(HEARTBEAT, struct.pack('<QQQ', mono_ns(), self.seq, 0), **kw)

    def frame(self, slot=0, fmt=BGRX, seq=None, pts=None, w=FRAME_W, h=FRAME_H, flags=None, plane_count=1,
              strides=None, offsets=(0, 0, 0)):
        if seq is None:
            seq = self.seq + 1
        if pts is None:
            pts = max(mono_ns(), self.pts)
        if flags is None:
            flags = FRAME_FORMAT_CHANGED if self.seq == 0 else 0
        if strides is None:
            strides = (w * 4, 0, 0)
        self.seq, self.pts = max(self.seq, seq), max(self.pts, pts)
        self.send(FRAME, FRAME_S.pack(slot, fmt, seq, pts, w, h, flags, plane_count, *strides, *offsets))

    def finish(self, code, text):
        data = text.encode()
        self.send(FINISH, struct.pack('<II', code, len(data)) + data)

    def drain_releases(self, seconds):
        """Reads (and drops) what the pusher sends for `seconds`: RELEASEs, CONFIG, HEARTBEATs."""
        deadline = time.monotonic() + seconds
        while True:
            m = self.next_message(deadline)
            if m is None or m[0] == 'CLOSED':
                return
            if m[0] != 'GARBAGE':
                for fd in m[2]:
                    os.close(fd)

    def tone(self, seconds, ahead_ns, real_time, budget_s=None):
        """A 440 Hz S16LE stereo 48 kHz tone in 20 ms AUDIO messages, stamped `ahead_ns` ahead of the
        clock; in real time, or as fast as the socket takes them (for at most `budget_s`)."""
        import math
        # 440 Hz makes 44 periods in 100 ms (4800 samples): five 20 ms chunks of 960 samples cycle
        # through one 100 ms pattern with a continuous phase.
        chunks = [b''.join(struct.pack('<hh', v, v) for v in
                           (int(12000 * math.sin(2 * math.pi * 440 * (c * 960 + i) / 48000)) for i in range(960)))
                  for c in range(5)]
        start = mono_ns()
        give_up = time.monotonic() + (budget_s if budget_s is not None else seconds + 5)
        for k in range(int(seconds * 50)):
            if time.monotonic() >= give_up:
                break
            due = start + k * 20_000_000
            if real_time:
                while mono_ns() < due:
                    self.drain_releases(min(0.02, (due - mono_ns()) / 1e9))
            self.send(AUDIO, AUDIO_S.pack(S16LE, 48000, 2, 0, 960, due + ahead_ns) + chunks[k % 5])
            if k % 50 == 0:
                self.drain_releases(0)

    def audio(self, frames=960, channels=2, rate=48000, fmt=S16LE, pcm_bytes=None, pts=None):
        n = frames * channels * 2 if pcm_bytes is None else pcm_bytes
        self.send(AUDIO, AUDIO_S.pack(fmt, rate, channels, 0, frames, pts or mono_ns()) + bytes(n))


def verdict_line(type_, payload):
    kind = 'ERROR' if type_ == ERROR else 'REJECT'
    if len(payload) < 8:
        return f'received {kind} with a {len(payload)}-byte payload'
    code, n = struct.unpack_from('<II', payload)
    text = payload[8:8 + n].decode('utf-8', 'replace').replace('\n', ' ')
    return f'received {kind} code={code} name={ERR_NAME.get(code, "UNKNOWN")} text={text}'
