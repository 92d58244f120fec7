#!/usr/bin/env python3
"""hostile_helper.py: a Capture Link helper that breaks one rule on purpose.

For the pusher's hostile-input tests and the conformance checker's self-test. Python 3,
standard library only.

    hostile_helper.py --list
    hostile_helper.py --group NAME --case CASE [--socket PATH] [--timeout SECONDS]

--list prints one line per case: CASE <TAB> EXPECTED_ERROR_NAME <TAB> description, where the
name is an lpc_error_code without the LPC_ERR_ prefix (BAD_SLOT, ...), or NONE for a case
whose correct answer is no ERROR at all. The expected answer is an ERROR message unless the
description ends with "[answer: REJECT]" or "[answer: ERROR or REJECT]".

A case connects, sends a valid HELLO (and waits for WELCOME, and sends START, where the case
needs it), then breaks exactly one rule. It then waits up to --timeout seconds (default 5)
for the pusher's answer and prints one line on stdout:

    received ERROR code=<n> name=<NAME> text=<text>
    received REJECT code=<n> name=<NAME> text=<text>
    connection closed without ERROR
    nothing received within <s> s

Exit status: 0 when the pusher answered with the expected code and the expected message
(REJECT for the refusals of a well-formed HELLO and for PEER_UID, ERROR for everything else,
protocol/SPEC.md §5.10 and §13.1), 1 otherwise, 2 for a bad command line or a case that
cannot run here (other-uid when not root). Setup failures (no WELCOME, say) print the line
for what was received and exit 1.

Expected codes follow protocol/SPEC.md, in particular:
  audio-without-capability: FORMAT (§5.4, appendix decision 4);
  audio-length: AUDIO, not BAD_LENGTH (§4.6): the header's payload_bytes is honest, only
    frame_count disagrees with the PCM that follows;
  hello-wrong-size, hello-reserved, hello-bad-name: ERROR, not REJECT (§5.10: a malformed
    HELLO gets ERROR);
  too-many-descriptors: TRUNCATED, because a receiver's control space holds 4 descriptors
    (§4.3); a pusher with a larger control buffer would answer DESCRIPTORS instead;
  slot-not-owned relies on "latest frame wins" (§7.4): the pusher keeps the newest frame, so
    slot 0 is still borrowed when the second FRAME names it.
The cases of issue 29 that end on their own finish with FINISH {SOURCE_LOST}, an unplanned end,
so that a supervising pusher (livepush screen) starts the next helper instead of ending its run.
Cases marked [pusher only] do not fit check-helper (they open 300 connections, kill themselves,
or, never reading, are timed out only after the socket has filled, later than check-helper's first
5 s): the pusher's own tests run them (HostileHelperTests, MisbehavingHelperTests).
The NONE cases expect no ERROR at all (those of issue 29 then print "ended without ERROR as
expected"; what the pusher made of them is for the test to read in its output):
  unknown-optional-type sends an unknown type 0x0031 with LPC_FLAG_OPTIONAL while capturing,
    then a HEARTBEAT, waits 1.5 s, sends FINISH {USER} and shuts its side; it prints
    "ignored as expected" if no ERROR came (the pusher closing, or staying quiet).
  helper-sends-error sends ERROR {STATE} after START (a 1.0 helper should send FINISH
    {ERROR} instead, but a pusher tolerates ERROR after HELLO and ends the session as for
    that FINISH, §5.14); it prints "ended without ERROR as expected".
other-uid must run as root: it computes the socket path as root (the pusher's uid), then
drops to the uid and gid of 'nobody' before connecting. The test harness must make the
directory and socket reachable for that uid (e.g. chmod o+x the directory, o+rw the socket)
or pass --socket.
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
TIMEOUT_S = 5.0  # --timeout, for the cases that run until the pusher acts


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


# ---------------------------------------------------------------- the cases
# Each: (name, expected error name or NONE, accepted answers, setup, description, action).
# setup: 'connect' (nothing sent), 'hello' (HELLO sent, WELCOME received), 'start' (START sent too).
# Actions take the Link. A HELLO override for the setup can be given by a `hello` dict.

CASES = []


def case(name, expected, setup, description, kinds=('ERROR',), hello=None):
    def register(fn):
        CASES.append(dict(name=name, expected=expected, setup=setup, description=description, kinds=kinds,
                          hello=hello or {}, action=fn))
        return fn
    return register


@case('truncated-header', 'BAD_LENGTH', 'hello', 'a datagram of 8 bytes, half a header')
def _(l):
    l.raw(HDR.pack(MAGIC, HEARTBEAT, 0, 24, 0)[:8])


@case('wrong-magic', 'BAD_MAGIC', 'hello', "a HEARTBEAT whose header.magic is 'MPCL', not 'LPCL'")
def _(l):
    l.heartbeat(magic=0x4C43504D)


@case('wrong-major', 'VERSION', 'connect', 'HELLO with version_major 2', kinds=('REJECT',))
def _(l):
    l.hello(major=2)


@case('length-lies', 'BAD_LENGTH', 'hello', 'a HEARTBEAT whose header.payload_bytes says 124 but 24 bytes follow')
def _(l):
    l.send(HEARTBEAT, struct.pack('<QQQ', mono_ns(), 0, 0), payload_bytes=124)


@case('hello-wrong-size', 'BAD_LENGTH', 'connect', 'HELLO with a 79-byte payload (honest payload_bytes)')
def _(l):
    l.hello(size=79)


@case('hello-reserved', 'RESERVED', 'connect', 'HELLO with reserved 1')
def _(l):
    l.hello(reserved=1)


@case('hello-bad-name', 'TEXT', 'connect', 'HELLO.helper_name holding the byte 0xFF (not UTF-8)')
def _(l):
    l.hello(name=b'bad\xffname')


@case('hello-zero-max', 'GEOMETRY', 'connect', 'HELLO with max_width 0', kinds=('REJECT',))
def _(l):
    l.hello(max_size=(0, 360))


@case('hello-no-formats', 'FORMAT', 'connect', 'HELLO with pixel_formats 0', kinds=('REJECT',))
def _(l):
    l.hello(pixel_formats=0)


@case('message-before-hello', 'STATE', 'connect', 'a valid HEARTBEAT as the first message')
def _(l):
    l.heartbeat()


@case('hello-late', 'TIMEOUT', 'connect', 'connects and sends nothing: no HELLO within 3000 ms')
def _(l):
    pass


@case('hello-twice', 'STATE', 'hello', 'a second valid HELLO after WELCOME')
def _(l):
    l.hello()


@case('unknown-required-type', 'UNKNOWN_TYPE', 'hello', 'message type 0x0030 without LPC_FLAG_OPTIONAL')
def _(l):
    l.send(0x0030)


@case('unknown-optional-type', 'NONE', 'start',
      'type 0x0031 with LPC_FLAG_OPTIONAL (must be ignored), a HEARTBEAT, then FINISH: expects no ERROR')
def _(l):
    l.send(0x0031, b'future!!', flags=FLAG_OPTIONAL)
    l.heartbeat()


@case('wrong-direction-type', 'STATE', 'hello', 'a RELEASE (a pusher-to-helper message) sent by the helper')
def _(l):
    l.send(RELEASE, struct.pack('<IIQ', 0, 0, 1))


@case('reserved-nonzero', 'RESERVED', 'hello', 'a HEARTBEAT with header.reserved 1')
def _(l):
    l.heartbeat(reserved=1)


@case('oversize-datagram', 'TRUNCATED', 'hello',
      'a 65552-byte datagram (honest header), larger than LPC_MESSAGE_MAX_BYTES: the receiver sees MSG_TRUNC')
def _(l):
    l.send(HEARTBEAT, bytes(65536))


@case('frame-before-start', 'STATE', 'hello', 'a valid FRAME after WELCOME but before START')
def _(l):
    l.frame()


@case('pause-before-start', 'STATE', 'hello', 'PAUSE {REQUESTED} before START')
def _(l):
    l.send(PAUSE, struct.pack('<I', 3))


@case('resume-not-paused', 'STATE', 'start', 'RESUME while capturing (not paused)')
def _(l):
    l.send(RESUME)


@case('frame-unknown-flag', 'RESERVED', 'start', 'FRAME.flags with unknown bit 0x80')
def _(l):
    l.frame(flags=FRAME_FORMAT_CHANGED | 0x80)


@case('oversize-dimensions', 'GEOMETRY', 'start', 'FRAME.width = WELCOME.max_width + 1 (stride to match)')
def _(l):
    w = l.w['max_w'] + 1
    l.frame(w=w, h=1, strides=(w * 4, 0, 0))


@case('stride-overflow', 'GEOMETRY', 'start',
      'FRAME at max size with stride 0xFFFFFFFC: stride*(height-1) is far beyond the slot and overflows 32-bit math')
def _(l):
    l.frame(w=l.w['max_w'], h=l.w['max_h'], strides=(0xFFFFFFFC, 0, 0))


@case('stride-wrap-32', 'GEOMETRY', 'start',
      'FRAME 64x3 with stride 0x80000000: offset + stride*2 + row_bytes wraps to 256 in 32-bit math')
def _(l):
    l.frame(w=64, h=3, strides=(0x80000000, 0, 0))


@case('stride-too-small', 'GEOMETRY', 'start', 'FRAME.stride[0] = width*4 - 4')
def _(l):
    l.frame(strides=(FRAME_W * 4 - 4, 0, 0))


@case('plane-count-wrong', 'GEOMETRY', 'start', 'a BGRX FRAME with plane_count 2')
def _(l):
    l.frame(plane_count=2, strides=(FRAME_W * 4, FRAME_W * 4, 0))


@case('plane-offset-out-of-slot', 'GEOMETRY', 'start',
      'FRAME.plane_offset[0] such that the last row ends 1 byte past slot_bytes')
def _(l):
    used = FRAME_W * 4 * FRAME_H
    l.frame(offsets=(l.w['slot_bytes'] - used + 1, 0, 0))


@case('plane-offset-wrap-32', 'GEOMETRY', 'start',
      'FRAME.plane_offset[0] 0xFFFFFFF0 on a 64x64 frame: the end wraps to a small number in 32-bit math')
def _(l):
    l.frame(offsets=(0xFFFFFFF0, 0, 0))


@case('slot-out-of-range', 'BAD_SLOT', 'start', 'FRAME.slot = WELCOME.slot_count')
def _(l):
    l.frame(slot=l.w['slot_count'])


@case('slot-not-owned', 'SLOT_NOT_OWNED', 'start',
      'two FRAMEs on slot 0 without waiting for RELEASE (the pusher keeps the newest frame, so slot 0 is held)')
def _(l):
    l.frame(slot=0)
    l.frame(slot=0)


@case('sequence-zero', 'SEQUENCE', 'start', 'the first FRAME has sequence 0')
def _(l):
    l.frame(seq=0)


@case('sequence-replayed', 'SEQUENCE', 'start', 'sequence 1 on slot 0, then sequence 1 again on slot 1')
def _(l):
    l.frame(slot=0, seq=1)
    l.frame(slot=1, seq=1)


@case('sequence-backwards', 'SEQUENCE', 'start', 'sequence 5 on slot 0, then sequence 4 on slot 1')
def _(l):
    l.frame(slot=0, seq=5)
    l.frame(slot=1, seq=4)


@case('pts-backwards', 'SEQUENCE', 'start', 'FRAME 2 has pts_ns one less than FRAME 1')
def _(l):
    t = mono_ns()
    l.frame(slot=0, seq=1, pts=t)
    l.frame(slot=1, seq=2, pts=t - 1)


@case('unexpected-descriptor', 'DESCRIPTORS', 'hello', 'a HEARTBEAT carrying one descriptor (SCM_RIGHTS)')
def _(l):
    fd = os.open('/dev/null', os.O_RDONLY | os.O_CLOEXEC)
    try:
        l.heartbeat(fds=[fd])
    finally:
        os.close(fd)


@case('too-many-descriptors', 'TRUNCATED', 'hello',
      'a HEARTBEAT carrying 6 descriptors: a receiver with control space for 4 gets MSG_CTRUNC')
def _(l):
    fds = [os.open('/dev/null', os.O_RDONLY | os.O_CLOEXEC) for _ in range(6)]
    try:
        l.heartbeat(fds=fds)
    finally:
        for fd in fds:
            os.close(fd)


@case('bad-format', 'FORMAT', 'start', 'FRAME.format 9 (no such format)')
def _(l):
    l.frame(fmt=9)


@case('format-not-negotiated', 'FORMAT', 'start', 'HELLO offers only BGRX, then an NV12 FRAME (valid geometry)',
      hello=dict(pixel_formats=1 << BGRX))
def _(l):
    l.frame(fmt=NV12, plane_count=2, strides=(FRAME_W, FRAME_W, 0), offsets=(0, FRAME_W * FRAME_H, 0))


@case('audio-without-capability', 'FORMAT', 'start',
      'a valid AUDIO block although HELLO asked for no AUDIO capability (FORMAT: audio format not negotiated)')
def _(l):
    l.audio()


@case('audio-length', 'AUDIO', 'start',
      'AUDIO frame_count 960 stereo S16LE (3840 bytes) followed by 3836 bytes of PCM (honest payload_bytes)',
      hello=dict(caps=CAP_AUDIO, audio_formats=1 << S16LE))
def _(l):
    if not l.w['caps'] & CAP_AUDIO:
        raise SetupFailed('the pusher did not accept the AUDIO capability')
    l.audio(pcm_bytes=3836)


@case('audio-bad-rate', 'AUDIO', 'start', 'AUDIO with rate_hz 7999',
      hello=dict(caps=CAP_AUDIO, audio_formats=1 << S16LE))
def _(l):
    if not l.w['caps'] & CAP_AUDIO:
        raise SetupFailed('the pusher did not accept the AUDIO capability')
    l.audio(rate=7999)


@case('start-bad-utf8', 'TEXT', 'hello', 'START whose JSON holds the byte 0xFF (not UTF-8)')
def _(l):
    l.start(b'{"source":"\xff"}')


@case('start-too-long', 'TEXT', 'hello', 'START with info_bytes 4097 (valid JSON padded with spaces)')
def _(l):
    info = b'{"source":"hostile"}'
    l.start(info + b' ' * (4097 - len(info)))


@case('start-not-object', 'TEXT', 'hello', 'START whose info is the JSON array [] (not an object)')
def _(l):
    l.start(b'[]')


@case('frame-while-paused', 'STATE', 'start', 'PAUSE {REQUESTED}, then a valid FRAME')
def _(l):
    l.send(PAUSE, struct.pack('<I', 3))
    l.frame()


@case('unchanged-malformed', 'GEOMETRY', 'start',
      'FRAME with LPC_FRAME_UNCHANGED but slot 0 and a geometry (HELLO asks for DAMAGE)',
      hello=dict(caps=CAP_DAMAGE))
def _(l):
    l.frame(flags=FRAME_UNCHANGED)


@case('helper-sends-error', 'NONE', 'start',
      'sends ERROR {STATE} after START: tolerated, the pusher ends the session without ERROR')
def _(l):
    text = b'hostile helper sends ERROR'
    l.send(ERROR, struct.pack('<II', ERR['STATE'], len(text)) + text)


@case('hung', 'TIMEOUT', 'start', 'sends nothing after START: the pusher must send ERROR TIMEOUT after ~3 s')
def _(l):
    pass


# ---------------------------------------------------------------- issue 29: a helper can never take the broadcast down

# What a terminal must never receive raw from a helper: clear the screen, retitle the window.
ESCAPES = '\x1b[2J\x1b]0;owned by a helper\x07'


def flood_frames(l, blocking):
    """FRAMEs at 100/s on the slots in turn, never reading (so never seeing a RELEASE): the pusher
    keeps the newest frame and gives the one before back at once, so the slot two frames back is
    free again. Stops when the pusher closes, or after --timeout seconds; returns what happened."""
    count = l.w['slot_count']
    give_up = time.monotonic() + TIMEOUT_S
    sent = refused = 0
    flags = 0 if blocking else socket.MSG_DONTWAIT
    while time.monotonic() < give_up:
        seq = l.seq + 1
        payload = FRAME_S.pack(seq % count, BGRX, seq, mono_ns(), FRAME_W, FRAME_H,
                               FRAME_FORMAT_CHANGED if seq == 1 else 0, 1, FRAME_W * 4, 0, 0, 0, 0, 0)
        try:
            l.sock.send(HDR.pack(MAGIC, FRAME, 0, len(payload), 0) + payload, flags | socket.MSG_NOSIGNAL)
            l.seq = seq
            sent += 1
        except BlockingIOError:
            refused += 1  # the pusher's socket is full for now: this frame is dropped
        except (BrokenPipeError, ConnectionResetError):
            return f'{sent} FRAMEs sent, {refused} refused, then the pusher closed the connection'
        time.sleep(0.01)
    return f'{sent} FRAMEs sent, {refused} refused; the pusher never closed the connection in {TIMEOUT_S:g} s'


@case('no-read-nonblocking', 'TIMEOUT', 'start',
      'FRAMEs at 100/s with non-blocking sends, never reading: the pusher\'s messages fill the socket; '
      'the pusher must not block and must end the session with ERROR TIMEOUT within peer_timeout_ms '
      '[pusher only]')
def _(l):
    print(flood_frames(l, blocking=False), file=sys.stderr)


@case('no-read-blocking', 'TIMEOUT', 'start',
      'the same with blocking sends: a pusher that blocked on its own sends would deadlock with it [pusher only]')
def _(l):
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError()))
    signal.alarm(int(TIMEOUT_S) + 2)  # a send blocked for good (the deadlock) ends here
    try:
        print(flood_frames(l, blocking=True), file=sys.stderr)
    except TimeoutError:
        print(f'blocked in send for {TIMEOUT_S:g} s: the pusher stopped reading (a deadlock)')
        sys.exit(1)
    finally:
        signal.alarm(0)


@case('message-flood', 'NONE', 'start',
      'HEARTBEATs as fast as the socket takes them for 2 s, then FINISH {SOURCE_LOST}: no ERROR')
def _(l):
    end = time.monotonic() + 2
    while time.monotonic() < end:
        for _ in range(200):
            l.heartbeat()
        while l.next_message(time.monotonic()) not in (None, ('CLOSED',)):
            pass  # read what the pusher sends (CONFIG, HEARTBEAT), so this is no reading strike
    l.finish(FINISH_SOURCE_LOST, 'flood over')


@case('connection-flood', 'NONE', 'start',
      '300 more connections at once while this session runs (its name holds terminal escapes): each gets '
      'REJECT BUSY, this session goes on [pusher only]', hello=dict(name=ESCAPES.encode()[:31]))
def _(l):
    pending = [socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC) for _ in range(300)]
    for s in pending:
        s.setblocking(False)
    connected, busy, other = [], 0, []
    give_up = time.monotonic() + 20
    while pending and time.monotonic() < give_up:
        waiting = []
        for s in pending:
            try:
                s.connect(l.path)
                connected.append(s)
            except (BlockingIOError, InterruptedError):
                waiting.append(s)  # the listen backlog is full: try again (SPEC §3.4: EAGAIN)
        pending = waiting
        l.heartbeat()
        time.sleep(0.01)
    for s in connected:
        s.setblocking(True)
        s.settimeout(5)
        try:
            data = s.recv(65536)
            code = struct.unpack_from('<I', data, 16)[0] if len(data) >= 20 else None
            if len(data) >= 16 and HDR.unpack_from(data)[1] == REJECT and code == ERR['BUSY']:
                busy += 1
            else:
                other.append(len(data))
        except OSError as e:
            other.append(str(e))
        s.close()
    for s in pending:
        s.close()
    print(f'{len(connected)} of 300 connected, {busy} got REJECT BUSY, others: {other[:5]}', file=sys.stderr)
    if busy != 300:
        raise SetupFailed(f'only {busy} of 300 connections got REJECT BUSY ({len(connected)} connected)')
    l.finish(FINISH_SOURCE_LOST, 'connection flood over')


@case('kill-mid-frame', 'NONE', 'start',
      'two FRAMEs, then half a picture written into a free slot and SIGKILL: the pusher sees the end '
      'of file at once [pusher only]')
def _(l):
    l.frame(slot=0)
    l.frame(slot=1)
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)


@case('escapes-in-finish', 'NONE', 'start',
      'HELLO.helper_name and FINISH {SOURCE_LOST} text holding ESC[2J and ESC]0;...BEL: shown escaped',
      hello=dict(name=ESCAPES.encode()[:31]))
def _(l):
    l.frame()
    l.finish(3, 'lost: ' + ESCAPES)


@case('escapes-in-error', 'NONE', 'start', 'ERROR {STATE} whose text holds ESC[2J and ESC]0;...BEL: shown escaped')
def _(l):
    text = ('the helper says ' + ESCAPES).encode()
    l.send(ERROR, struct.pack('<II', ERR['STATE'], len(text)) + text)


@case('escapes-in-start', 'TEXT', 'hello',
      "START whose JSON holds a raw ESC[2J and ESC]0;...BEL (not valid JSON): TEXT, quoted escaped")
def _(l):
    l.start(('{"source":"' + ESCAPES + '"}').encode())


@case('future-frames', 'NONE', 'start',
      'FRAMEs stamped one hour ahead for 2 s, then FINISH {SOURCE_LOST}: the pusher uses the arrival time and warns')
def _(l):
    end = time.monotonic() + 2
    slot = 0
    while time.monotonic() < end:
        l.frame(slot=slot, pts=mono_ns() + 3600 * 10**9)
        slot = 1 - slot
        l.drain_releases(0.033)
    l.finish(FINISH_SOURCE_LOST, 'an hour ahead')


@case('future-audio', 'NONE', 'start',
      'a 440 Hz tone in AUDIO stamped 5 s ahead, 20 ms a message in real time for 2 s, then FINISH {SOURCE_LOST}: '
      'the pusher places it at its arrival', hello=dict(caps=CAP_AUDIO, audio_formats=1 << S16LE))
def _(l):
    if not l.w['caps'] & CAP_AUDIO:
        raise SetupFailed('the pusher did not accept the AUDIO capability')
    l.tone(seconds=2, ahead_ns=5 * 10**9, real_time=True)
    l.finish(FINISH_SOURCE_LOST, 'tone sent')


@case('audio-flood', 'NONE', 'start',
      '1200 s of AUDIO sent within 2 s (timestamps racing ahead of the clock), then FINISH {SOURCE_LOST}: warned, '
      'not a violation', hello=dict(caps=CAP_AUDIO, audio_formats=1 << S16LE))
def _(l):
    if not l.w['caps'] & CAP_AUDIO:
        raise SetupFailed('the pusher did not accept the AUDIO capability')
    l.tone(seconds=1200, ahead_ns=0, real_time=False, budget_s=2)
    l.finish(FINISH_SOURCE_LOST, 'flood over')


@case('pause-unknown-reason', 'NONE', 'start',
      'PAUSE with reason 77 (unknown), RESUME, then FINISH with code 99 (unknown): both shown as numbers')
def _(l):
    l.frame()
    l.send(PAUSE, struct.pack('<I', 77))
    l.drain_releases(0.5)
    l.send(RESUME)
    l.frame(slot=1)
    l.drain_releases(0.3)
    l.finish(99, 'an unknown reason')


@case('finish-user', 'NONE', 'start', 'a frame, then FINISH {USER}: reported as the planned end it is')
def _(l):
    l.frame()
    l.drain_releases(0.3)
    l.finish(FINISH_USER, 'my user stopped me')


@case('other-uid', 'PEER_UID', 'connect',
      "as root: drops to the uid of 'nobody' before connecting; expects REJECT PEER_UID", kinds=('REJECT',))
def _(l):
    l.hello()


# ---------------------------------------------------------------- running one case

def drop_to_nobody():
    import pwd
    if os.geteuid() != 0:
        print("hostile_helper: case other-uid must run as root (it drops to the uid of 'nobody'); "
              "run the test as root or skip it", file=sys.stderr)
        sys.exit(2)
    pw = pwd.getpwnam('nobody')
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)


def run_case(c, path, timeout):
    if c['name'] == 'other-uid':
        drop_to_nobody()
    l = Link(path)
    try:
        l.connect()
        if c['setup'] in ('hello', 'start'):
            l.hello(**c['hello'])
            l.welcome()
            if c['setup'] == 'start':
                l.start()
        c['action'](l)
        if c['name'] == 'unknown-optional-type':
            return optional_verdict(l, timeout)
        if c['expected'] == 'NONE':
            return no_error_verdict(l, timeout)
    except SetupFailed as e:
        line = str(e)
        print(line if line.startswith('received') or line.startswith('connection') else f'setup failed: {line}')
        return 1
    deadline = time.monotonic() + timeout
    while True:
        m = l.next_message(deadline)
        if m is None:
            print(f'nothing received within {timeout:g} s')
            return 1
        if m[0] == 'CLOSED':
            print('connection closed without ERROR')
            return 1
        if m[0] == 'GARBAGE':
            print(f'received a {len(m[1])}-byte datagram, shorter than a header')
            return 1
        type_, payload, fds = m
        for fd in fds:
            os.close(fd)
        if type_ in (ERROR, REJECT):
            print(verdict_line(type_, payload))
            kind = 'ERROR' if type_ == ERROR else 'REJECT'
            code = struct.unpack_from('<I', payload)[0] if len(payload) >= 4 else None
            return 0 if code == ERR[c['expected']] and kind in c['kinds'] else 1
        # RELEASE, HEARTBEAT, CONFIG, STOP...: keep waiting for the verdict


def watch(l, seconds):
    """None (quiet), ('CLOSED',), or (type, payload) of the first ERROR or REJECT."""
    deadline = time.monotonic() + seconds
    while True:
        m = l.next_message(deadline)
        if m is None or m[0] == 'CLOSED':
            return m
        if m[0] == 'GARBAGE':
            continue
        type_, payload, fds = m
        for fd in fds:
            os.close(fd)
        if type_ in (ERROR, REJECT):
            return (type_, payload)


def no_error_verdict(l, timeout):
    """helper-sends-error: the pusher must end the session without answering ERROR."""
    try:
        l.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    m = watch(l, timeout)
    if m is not None and m[0] != 'CLOSED':
        print(verdict_line(*m))
        return 1
    print('ended without ERROR as expected')
    return 0


def optional_verdict(l, timeout):
    """unknown-optional-type: no ERROR may come, neither for the optional message nor later."""
    m = watch(l, 1.5)
    if m is not None and m[0] == 'CLOSED':
        print('connection closed without ERROR before FINISH: the optional message was not ignored')
        return 1
    if m is not None:
        print(verdict_line(*m))
        return 1
    reason = 'done'.encode()
    l.send(FINISH, struct.pack('<II', 1, len(reason)) + reason)
    try:
        l.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    m = watch(l, timeout)
    if m is not None and m[0] != 'CLOSED':
        print(verdict_line(*m))
        return 1
    print('ignored as expected')
    return 0


def main():
    ap = argparse.ArgumentParser(description='A Capture Link helper that breaks one rule on purpose.')
    ap.add_argument('--list', action='store_true', help='print CASE<TAB>EXPECTED_ERROR_NAME<TAB>description lines')
    ap.add_argument('--group', help='the capture group the pusher serves')
    ap.add_argument('--case', help='the case to run (see --list)')
    ap.add_argument('--socket', help='connect to this path instead of the group\'s rendezvous path')
    ap.add_argument('--timeout', type=float, default=5.0, help='seconds to wait for the answer (default 5)')
    a = ap.parse_args()
    global TIMEOUT_S
    TIMEOUT_S = a.timeout
    if a.list:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--list | head` is fine
        for c in CASES:
            answer = '' if c['kinds'] == ('ERROR',) else f" [answer: {' or '.join(c['kinds'])}]"
            print(f"{c['name']}\t{c['expected']}\t{c['description']}{answer}")
        return 0
    if not a.case or not (a.group or a.socket):
        ap.error('--case and --group (or --socket) are required unless --list is given')
    c = next((c for c in CASES if c['name'] == a.case), None)
    if c is None:
        ap.error(f"unknown case '{a.case}'; --list prints them")
    if a.socket:
        path = a.socket
    else:
        xdg = os.environ.get('XDG_RUNTIME_DIR', '')  # empty or relative counts as unset
        path = f'{xdg}/livepush/{a.group}.sock' if xdg.startswith('/') else f'/tmp/livepush-{os.getuid()}/{a.group}.sock'
    return run_case(c, path, a.timeout)


if __name__ == '__main__':
    sys.exit(main())
