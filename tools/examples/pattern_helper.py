#!/usr/bin/env python3
"""pattern_helper.py: a reference Capture Link capture helper in Python 3 (standard library only).

The same helper as pattern-helper.c: it speaks the helper's side of Capture Link v1
(protocol/SPEC.md, protocol/livepush_capture.h) and sends a test pattern that a pusher
or a test can check pixel by pixel, and in which a torn frame shows at once.

Usage:

    pattern_helper.py [--group NAME] [--size WxH] [--fps N] [--frames N]
                      [--format bgrx|nv12|i420] [--audio] [--connect-timeout-ms N]

The pattern, for the frame whose FRAME.sequence is n and the pixel (x, y):

    BGRX         B = (x + y + n) & 0xFF, G = (n >> 8) & 0xFF, R = n & 0xFF, X = 0xFF
    NV12, I420   Y = (x + y + n) & 0xFF for every luma sample;
                 U = n & 0xFF and V = (n >> 8) & 0xFF for every chroma sample

Layout in a slot: planes one after another from offset 0, each plane offset a multiple of 64,
each stride its row bytes rounded up to a multiple of 64; if those padded strides do not fit
the pusher's slot_bytes, unpadded strides (row bytes exactly). Checkers must use FRAME.stride
and FRAME.plane_offset.

Speed: row y of a BGRX frame is a window into one precomputed run of (width + 256) pixels
starting at pixel (y + n) & 0xFF, so a frame is `height` slice copies into the mmap; a
1920x1080 frame costs a few milliseconds of one core.

Behaviour (the same as the C helper's): a frame dropped for want of a free slot does not use
up a sequence number; frames are cropped to min(--size, WELCOME.max, CONFIG.max); a pusher that
breaks a rule (or is silent for peer_timeout_ms) gets FINISH {LPC_FINISH_ERROR, "NAME: what"};
after FINISH the helper shuts down its sending side and reads until the pusher closes (at most
1 s) so that the pusher always reads that last message.

Exit status: 0 finished normally (--frames reached, STOP, SIGINT or SIGTERM), 1 runtime error,
2 bad command line.
"""
import argparse
import array
import fcntl
import json
import math
import mmap
import os
import re
import select
import signal
import socket
import stat
import struct
import sys
import time

PROG = 'pattern-helper'
HELPER_NAME = b'pattern-helper-py'
HELPER_VERSION = b'1.0.0'

# ---------------------------------------------------------------- protocol constants (livepush_capture.h)
VERSION_MAJOR, VERSION_MINOR = 1, 0
MESSAGE_MAGIC = 0x4C43504C
RING_MAGIC = 0x474E524C
MESSAGE_MAX_BYTES = 65536
TEXT_MAX_BYTES = 1024
RING_HEADER_BYTES = 4096
FLAG_OPTIONAL = 0x0001
CONNECT_RETRY_MS_DEFAULT = 10000
HEARTBEAT_INTERVAL_MS = 1000
PEER_TIMEOUT_MS = 3000
MIN_SLOTS, MAX_SLOTS = 3, 4

HELLO, START, FRAME, AUDIO, PAUSE, RESUME, FINISH = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
HEARTBEAT = 0x40
WELCOME, REJECT, RELEASE, CONFIG, STOP, ERROR = 0x81, 0x82, 0x83, 0x84, 0x85, 0x86
KNOWN_TYPES = {HELLO, START, FRAME, AUDIO, PAUSE, RESUME, FINISH, HEARTBEAT,
               WELCOME, REJECT, RELEASE, CONFIG, STOP, ERROR}

CAP_AUDIO = 0x0001
FORMAT_BGRX, FORMAT_NV12, FORMAT_I420 = 1, 5, 6
FORMATS = {'bgrx': FORMAT_BGRX, 'nv12': FORMAT_NV12, 'i420': FORMAT_I420}
OFFERED_FORMATS = (1 << FORMAT_BGRX) | (1 << FORMAT_NV12) | (1 << FORMAT_I420)
AUDIO_S16LE = 1
FRAME_FORMAT_CHANGED = 0x0004
CONFIG_CURSOR = 0x0001
F_GET_SEALS = 1034                               # fcntl; F_SEAL_SEAL 1 | SHRINK 2 | GROW 4
FINISH_USER, FINISH_ERROR = 1, 4

ERROR_NAMES = {1: 'BAD_MAGIC', 2: 'BAD_LENGTH', 3: 'UNKNOWN_TYPE', 4: 'VERSION', 5: 'STATE', 6: 'BAD_SLOT',
               7: 'SLOT_NOT_OWNED', 8: 'SEQUENCE', 9: 'GEOMETRY', 10: 'FORMAT', 11: 'DESCRIPTORS',
               12: 'TRUNCATED', 13: 'PEER_UID', 14: 'BUSY', 15: 'TIMEOUT', 16: 'AUDIO', 17: 'TEXT',
               18: 'RESERVED'}
ERR = {v: k for k, v in ERROR_NAMES.items()}

# wire layouts, little-endian, no padding
HEADER = struct.Struct('<IHHII')                 # magic type flags payload_bytes reserved
HELLO_S = struct.Struct('<HHIIIIIII32s16s')      # 80
WELCOME_S = struct.Struct('<HHIQQIIQQIIIIII')    # 72
FRAME_S = struct.Struct('<IIQQIIII3I3I')         # 64
AUDIO_S = struct.Struct('<IIHHIQ')               # 24
RELEASE_S = struct.Struct('<IIQ')                # 16
CONFIG_S = struct.Struct('<IIII')                # 16
HEARTBEAT_S = struct.Struct('<QQQ')              # 24
REASON_S = struct.Struct('<II')                  # 8
RING_S = struct.Struct('<IHHQIIQQQ')             # line 0 of lpc_ring_header (the first 48 bytes)
RING_COUNTERS_OFFSET = 64                        # line 1: helper_frames_published, helper_frames_dropped

NS_PER_MS = 1000000
NS_PER_S = 1000000000
PLANE_ALIGN = 64
CONTROL_FDS = 4
AUDIO_RATE, AUDIO_CHANNELS, AUDIO_BLOCK_FRAMES = 48000, 2, 960   # 20 ms blocks
AUDIO_BLOCK_NS = 20 * NS_PER_MS
SINE_HZ, SINE_PERIOD_FRAMES = 440, 1200                          # 1200 frames = 11 whole cycles
GROUP_RE = re.compile(r'[A-Za-z0-9._-]{1,64}\Z')
MAX_DIMENSION = 16384


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def say(text):
    print(f'{PROG}: {text}', file=sys.stderr, flush=True)


def printable(b):
    return ''.join('?' if ord(c) < 0x20 or ord(c) == 0x7F else c for c in b.decode('utf-8', 'replace'))


def round_up(v, to):
    return (v + to - 1) // to * to


class Exit(Exception):
    """Leave the program with this status (message already printed)."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


class PusherViolation(Exception):
    def __init__(self, code, text):
        super().__init__(text)
        self.code, self.text = code, text


def make_layout(fmt, w, h, slot_bytes, padded):
    """Returns [(offset, stride, row_bytes, rows)] per plane, or None if it does not fit the slot."""
    cw, ch = (w + 1) // 2, (h + 1) // 2
    if fmt == FORMAT_BGRX:
        planes = [(4 * w, h)]
    elif fmt == FORMAT_NV12:
        planes = [(w, h), (2 * cw, ch)]
    else:
        planes = [(w, h), (cw, ch), (cw, ch)]
    out, offset = [], 0
    for row_bytes, rows in planes:
        stride = round_up(row_bytes, PLANE_ALIGN) if padded else row_bytes
        offset = round_up(offset, PLANE_ALIGN)
        out.append((offset, stride, row_bytes, rows))
        offset += stride * (rows - 1) + row_bytes
    return out if offset <= slot_bytes and offset <= 0xFFFFFFFF else None


class Painter:
    """Draws the pattern with one slice copy per row."""

    def __init__(self):
        self.width = None

    def prepare(self, w):
        if self.width == w:
            return
        self.width = w
        k = w + 256
        self.bgrx = bytearray(4 * k)
        self.bgrx[0::4] = bytes(i & 0xFF for i in range(k))
        self.bgrx[3::4] = b'\xff' * k
        self.k = k
        self.luma = memoryview(bytes(i & 0xFF for i in range(k)))

    def draw(self, slot, fmt, w, h, layout, n):
        """slot: a writable memoryview of the slot."""
        self.prepare(w)
        lo, hi = n & 0xFF, (n >> 8) & 0xFF
        if fmt == FORMAT_BGRX:
            self.bgrx[1::4] = bytes((hi,)) * self.k      # G
            self.bgrx[2::4] = bytes((lo,)) * self.k      # R
            src = memoryview(self.bgrx)
            offset, stride, row_bytes, _ = layout[0]
            for y in range(h):
                s = ((y + n) & 0xFF) * 4
                a = offset + y * stride
                slot[a:a + row_bytes] = src[s:s + row_bytes]
            return
        offset, stride, _, _ = layout[0]
        luma = self.luma
        for y in range(h):
            s = (y + n) & 0xFF
            a = offset + y * stride
            slot[a:a + w] = luma[s:s + w]
        if fmt == FORMAT_NV12:
            offset, stride, row_bytes, rows = layout[1]
            # stride is even, so one run of U V pairs covers every row (padding included)
            size = stride * (rows - 1) + row_bytes
            slot[offset:offset + size] = bytes((lo, hi)) * (size // 2)
        else:
            for p, value in ((1, lo), (2, hi)):
                offset, stride, row_bytes, rows = layout[p]
                size = stride * (rows - 1) + row_bytes
                slot[offset:offset + size] = bytes((value,)) * size


class Helper:
    def __init__(self, args):
        self.args = args
        self.group = args.group
        self.width, self.height = args.size
        self.format = FORMATS[args.format]
        self.sock = None
        self.ring = None
        self.ring_view = None
        self.signal = None
        self.failing = False
        self.peer_reset = False
        self.heartbeat_ns = HEARTBEAT_INTERVAL_MS * NS_PER_MS
        self.peer_timeout_ns = PEER_TIMEOUT_MS * NS_PER_MS
        self.last_send = self.last_recv = now_ns()
        self.sequence = 0
        self.frames_sent = 0
        self.frames_dropped = 0
        self.last_geometry = None
        self.config_max = None
        self.fps_changed = False
        self.painter = Painter()
        self.audio_frames = 0
        xdg = os.environ.get('XDG_RUNTIME_DIR', '')
        if xdg.startswith('/'):  # empty or relative counts as unset
            self.path = f'{xdg}/livepush/{self.group}.sock'
        else:
            self.path = f'/tmp/livepush-{os.getuid()}/{self.group}.sock'

    # ------------------------------------------------------------ leaving
    def fail(self, text):
        say(text)
        raise Exit(1)

    def lost_pusher(self):
        """The pusher is gone (EOF, EPIPE, ECONNRESET). It may have queued a REJECT or an ERROR
        saying why just before it closed (a sending error comes before reading it): report that."""
        for _ in range(256):
            if self.sock is None:
                break
            try:
                msg, anc, _, _ = self.sock.recvmsg(MESSAGE_MAX_BYTES, socket.CMSG_SPACE(CONTROL_FDS * 4),
                                                   socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
            except (ConnectionResetError, InterruptedError):
                continue
            except OSError:
                break
            for fd in self.fds_of(anc):
                os.close(fd)
            if not msg:
                break
            if len(msg) < HEADER.size + REASON_S.size:
                continue
            magic, type_, _, payload_bytes, _ = HEADER.unpack_from(msg)
            code, text_bytes = REASON_S.unpack_from(msg, HEADER.size)
            if (magic != MESSAGE_MAGIC or HEADER.size + payload_bytes != len(msg)
                    or REASON_S.size + text_bytes != payload_bytes or text_bytes > TEXT_MAX_BYTES):
                continue
            text = printable(msg[HEADER.size + REASON_S.size:])
            if type_ == REJECT:
                self.fail(f'the pusher rejected this helper: {ERROR_NAMES.get(code, "unknown code")} ({code}): '
                          f'{text}; {reject_advice(code)}')
            if type_ == ERROR:
                self.fail(f"the pusher reported error {code} ({ERROR_NAMES.get(code, 'unknown code')}): {text}; "
                          f"this helper broke a rule or was too slow, see the pusher's log")
        self.fail(f"pusher closed the connection (group '{self.group}', {self.path}); check the pusher's "
                  f"log for why, then start this helper again")

    def violation(self, code, text):
        """The pusher broke a rule (or went silent): FINISH {LPC_FINISH_ERROR, text naming the field
        and value} to it, the same on stderr, exit 1 (SPEC.md §13.3; in 1.0 ERROR is the pusher's
        message only). `code` is the error code the rule would carry, for the log only; 0 if none fits."""
        self.failing = True
        # a hung pusher will not close its end: do not wait for it
        if (self.sock is not None and self.send_reason(FINISH, FINISH_ERROR, text)
                and code != ERR['TIMEOUT']):
            self.close_gracefully()
        if code == ERR['TIMEOUT']:
            self.fail(f'{text}; the pusher is hung or overloaded: restart it')
        name = f' ({ERROR_NAMES.get(code, code)})' if code else ''
        self.fail(f'the pusher broke the Capture Link protocol{name}: {text}; '
                  f'this is a bug in the pusher, report it with this line')

    def finish(self, reason, text, status=0):
        self.send_reason(FINISH, reason, text)
        self.close_gracefully()
        raise Exit(status)

    def close_gracefully(self):
        """After our last message: shut our side and read until the pusher closes (at most 1 s).
        Closing with the pusher's messages unread makes Linux report ECONNRESET to the pusher,
        which a pusher could take for "gone" before reading our last message."""
        if self.sock is None:
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
            give_up = now_ns() + 1000 * NS_PER_MS
            while True:
                left = give_up - now_ns()
                if left <= 0 or not select.select([self.sock], [], [], left / NS_PER_S)[0]:
                    break
                try:
                    msg, anc, _, _ = self.sock.recvmsg(MESSAGE_MAX_BYTES, socket.CMSG_SPACE(CONTROL_FDS * 4),
                                                       socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
                except (BlockingIOError, InterruptedError):
                    continue
                for fd in self.fds_of(anc):
                    os.close(fd)
                if not msg and not anc:
                    break
        except OSError:
            pass
        self.sock.close()
        self.sock = None

    def cleanup(self):
        try:
            if self.ring_view is not None:
                self.ring_view.release()
            if self.ring is not None:
                self.ring.close()
        except BufferError:
            pass  # a view is still alive; the mapping goes with the process
        self.ring_view = self.ring = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    # ------------------------------------------------------------ sending
    def send(self, type_, payload=b''):
        data = HEADER.pack(MESSAGE_MAGIC, type_, 0, len(payload), 0) + payload
        give_up = now_ns() + self.peer_timeout_ns
        while True:
            try:
                self.sock.send(data, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
                self.last_send = now_ns()
                return True
            except InterruptedError:
                continue
            except BlockingIOError:
                left = give_up - now_ns()
                if left <= 0:
                    if self.failing:
                        return False
                    self.fail(f'the pusher has not read anything for {self.peer_timeout_ns // NS_PER_MS} ms; '
                              f'it is hung: restart the pusher')
                select.select([], [self.sock], [], left / NS_PER_S)
            except (BrokenPipeError, ConnectionResetError, ConnectionRefusedError):
                if self.failing:
                    return False
                self.lost_pusher()
            except OSError as e:
                if self.failing:
                    return False
                self.fail(f'sending to the pusher failed: {e.strerror}')

    def send_reason(self, type_, code, text):
        t = text.encode('utf-8')[:TEXT_MAX_BYTES]
        t = t.decode('utf-8', 'ignore').encode('utf-8')  # never cut a character in two
        return self.send(type_, REASON_S.pack(code, len(t)) + t)

    def send_heartbeat(self):
        self.send(HEARTBEAT, HEARTBEAT_S.pack(now_ns(), self.frames_sent, self.frames_dropped))

    # ------------------------------------------------------------ receiving
    @staticmethod
    def fds_of(anc):
        fds = []
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                a = array.array('i')
                a.frombytes(data[:len(data) - len(data) % a.itemsize])
                fds.extend(a)
        return fds

    def receive(self):
        """One message without blocking: (type, flags, payload, fds), None if nothing queued.
        SPEC §4.4 checks 1-4 (truncation, length, magic, reserved); raises PusherViolation."""
        while True:
            try:
                msg, anc, flags, _ = self.sock.recvmsg(MESSAGE_MAX_BYTES, socket.CMSG_SPACE(CONTROL_FDS * 4),
                                                       socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
                break
            except InterruptedError:
                continue
            except BlockingIOError:
                if self.peer_reset:
                    self.lost_pusher()
                return None
            except ConnectionResetError:
                # The pusher closed with our messages unread. Linux reports ECONNRESET once, before
                # the messages the pusher queued for us (a REJECT, an ERROR, a STOP): read those.
                if self.peer_reset:
                    self.lost_pusher()
                self.peer_reset = True
        fds = self.fds_of(anc)
        if not msg and not fds:
            self.lost_pusher()
        self.last_recv = now_ns()
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise PusherViolation(ERR['TRUNCATED'], 'message truncated on receipt (%s); at most %d bytes and %d '
                                      'descriptors fit' % ('MSG_TRUNC' if flags & socket.MSG_TRUNC else 'MSG_CTRUNC',
                                                           MESSAGE_MAX_BYTES, CONTROL_FDS))
            if len(msg) < HEADER.size:
                raise PusherViolation(ERR['BAD_LENGTH'], f'datagram of {len(msg)} bytes is shorter than the 16-byte header')
            magic, type_, hflags, payload_bytes, reserved = HEADER.unpack_from(msg)
            if HEADER.size + payload_bytes != len(msg):
                raise PusherViolation(ERR['BAD_LENGTH'], f'header.payload_bytes {payload_bytes} but the datagram holds '
                                      f'{len(msg) - HEADER.size} payload bytes')
            if magic != MESSAGE_MAGIC:
                raise PusherViolation(ERR['BAD_MAGIC'], f'header.magic 0x{magic:08x} is not 0x{MESSAGE_MAGIC:08x}')
            if reserved:
                raise PusherViolation(ERR['RESERVED'], f'header.reserved {reserved} is not 0')
        except PusherViolation:
            for fd in fds:
                os.close(fd)
            raise
        return type_, hflags, msg[HEADER.size:], fds

    def check_type_and_descriptors(self, type_, hflags, fds):
        """SPEC §4.4 checks 5-6 for anything but WELCOME. False: ignore the message."""
        if type_ not in KNOWN_TYPES:
            for fd in fds:
                os.close(fd)
            if hflags & FLAG_OPTIONAL:
                return False
            raise PusherViolation(ERR['UNKNOWN_TYPE'], f'message type 0x{type_:04x} is unknown and not marked optional')
        if fds:
            for fd in fds:
                os.close(fd)
            raise PusherViolation(ERR['DESCRIPTORS'], f'message type 0x{type_:04x} carried {len(fds)} descriptor(s); '
                                  f'only WELCOME may carry one')
        return True

    @staticmethod
    def expect_size(name, payload, size):
        if len(payload) != size:
            raise PusherViolation(ERR['BAD_LENGTH'], f'{name} payload is {len(payload)} bytes, not {size}')

    @staticmethod
    def read_reason(name, payload):
        if len(payload) < REASON_S.size:
            raise PusherViolation(ERR['BAD_LENGTH'], f'{name} payload is {len(payload)} bytes, shorter than 8')
        code, text_bytes = REASON_S.unpack_from(payload)
        if REASON_S.size + text_bytes != len(payload):
            raise PusherViolation(ERR['BAD_LENGTH'], f'{name}.text_bytes {text_bytes} but '
                                  f'{len(payload) - REASON_S.size} text bytes follow')
        if text_bytes > TEXT_MAX_BYTES:
            raise PusherViolation(ERR['TEXT'], f'{name}.text_bytes {text_bytes} exceeds {TEXT_MAX_BYTES}')
        raw = payload[REASON_S.size:]
        try:
            if b'\0' in raw:
                raise UnicodeDecodeError('utf-8', raw, 0, 1, 'NUL')
            raw.decode('utf-8')
        except UnicodeDecodeError:
            raise PusherViolation(ERR['TEXT'], f'{name} text is not valid UTF-8 (or holds a NUL)')
        return code, printable(raw)

    # ------------------------------------------------------------ connecting
    def connect(self):
        if len(os.fsencode(self.path)) > 107:
            self.fail(f"the socket path {self.path} for group '{self.group}' is longer than 107 bytes; use a "
                      f"shorter XDG_RUNTIME_DIR or group name")
        give_up = now_ns() + self.args.connect_timeout_ms * NS_PER_MS
        delay_ms = 100
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
            try:
                s.connect(self.path)
                self.sock = s
                self.check_pusher_identity()
                return
            except (FileNotFoundError, ConnectionRefusedError, BlockingIOError, InterruptedError) as e:
                # ENOENT: no socket yet; ECONNREFUSED: a stale socket, the pusher is starting;
                # EAGAIN: its listen backlog is full. Anything else ends the attempt.
                s.close()
                last_error = e.strerror or 'interrupted'
            except PermissionError as e:
                s.close()
                self.fail(f'cannot connect to {self.path}: {e.strerror}; run this helper as the same user as the pusher')
            except OSError as e:
                s.close()
                self.fail(f'cannot connect to {self.path}: {e.strerror}')
            if self.signal:
                raise Exit(0)
            now = now_ns()
            if now >= give_up:
                self.fail(f"no pusher for group '{self.group}' at {self.path} after {self.args.connect_timeout_ms} ms: "
                          f"{last_error}; start the pusher with this capture group first, or raise "
                          f"--connect-timeout-ms")
            time.sleep(min(delay_ms * NS_PER_MS, give_up - now) / NS_PER_S)
            delay_ms = min(delay_ms * 2, 1000)

    def check_pusher_identity(self):
        """SPEC §3.4 step 5 (SHOULD): the process serving the socket, and the directory holding it,
        belong to this helper's user."""
        pid, uid, _ = struct.unpack('3i', self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            self.fail(f'the process serving {self.path} (pid {pid}) runs as uid {uid}, not as this helper\'s uid '
                      f'{os.getuid()}; run the helper as the pusher\'s user')
        directory = os.path.dirname(self.path)
        try:
            st = os.lstat(directory)
        except OSError as e:
            self.fail(f'cannot inspect the socket directory {directory}: {e.strerror}')
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            self.fail(f'the socket directory {directory} (owner uid {st.st_uid}, mode {st.st_mode & 0o7777:04o}) is '
                      f'not a private directory of uid {os.getuid()}; another user may have prepared it: remove it '
                      f'and restart the pusher')

    def send_hello(self):
        caps = CAP_AUDIO if self.args.audio else 0
        afmts = (1 << AUDIO_S16LE) if self.args.audio else 0
        self.send(HELLO, HELLO_S.pack(VERSION_MAJOR, VERSION_MINOR, os.getpid(), caps, OFFERED_FORMATS, afmts,
                                      self.width, self.height, 0, HELPER_NAME, HELPER_VERSION))

    def await_welcome(self):
        give_up = now_ns() + PEER_TIMEOUT_MS * NS_PER_MS
        while True:
            if self.signal:
                self.finish(FINISH_USER, f'stopped by {self.signal_name()}')
            left = give_up - now_ns()
            if left <= 0:
                self.fail(f'the pusher at {self.path} answered HELLO with neither WELCOME nor REJECT within '
                          f'{PEER_TIMEOUT_MS} ms; it is hung or not a LivePush pusher: restart it')
            try:
                if not select.select([self.sock], [], [], left / NS_PER_S)[0]:
                    continue
            except InterruptedError:
                continue
            m = self.receive()
            if m is None:
                continue
            type_, hflags, payload, fds = m
            if type_ == WELCOME:
                if len(fds) != 1:
                    for fd in fds:
                        os.close(fd)
                    raise PusherViolation(ERR['DESCRIPTORS'], f'WELCOME carried {len(fds)} descriptors, not exactly 1')
                ring_fd = fds[0]
                try:
                    if len(payload) != WELCOME_S.size:
                        raise PusherViolation(ERR['BAD_LENGTH'], f'WELCOME payload is {len(payload)} bytes, not 72')
                    self.validate_welcome(payload)
                    self.map_ring(ring_fd)
                finally:
                    os.close(ring_fd)
                return
            if not self.check_type_and_descriptors(type_, hflags, fds):
                continue
            if type_ == REJECT:
                code, text = self.read_reason('REJECT', payload)
                self.fail(f'the pusher rejected this helper: {ERROR_NAMES.get(code, "unknown code")} ({code}): {text}; '
                          f'{reject_advice(code)}')
            elif type_ == ERROR:
                code, text = self.read_reason('ERROR', payload)
                self.fail(f"the pusher reported error {code} ({ERROR_NAMES.get(code, 'unknown code')}): {text}; "
                          f"see the pusher's log")
            else:  # HEARTBEAT, CONFIG, STOP... are not allowed before WELCOME (SPEC §12.8)
                raise PusherViolation(ERR['STATE'], f'message type 0x{type_:04x} before WELCOME')

    def validate_welcome(self, payload):
        """SPEC §5.9: every range of WELCOME's table."""
        (major, minor, caps, session_id, ring_bytes, slot_count, pixel_formats, slot_bytes, first_slot_offset,
         max_w, max_h, fps, hb_ms, timeout_ms, reserved) = WELCOME_S.unpack(payload)
        offered_caps = CAP_AUDIO if self.args.audio else 0
        if reserved:
            raise PusherViolation(ERR['RESERVED'], f'WELCOME.reserved {reserved} is not 0')
        if major != VERSION_MAJOR or minor > VERSION_MINOR:
            raise PusherViolation(ERR['VERSION'], f'WELCOME.version {major}.{minor}, but this helper speaks '
                                  f'{VERSION_MAJOR}.{VERSION_MINOR}')
        if caps & ~offered_caps:
            raise PusherViolation(ERR['FORMAT'], f'WELCOME.capabilities 0x{caps:x} has bits this helper did not ask for')
        if pixel_formats & ~OFFERED_FORMATS or not pixel_formats:
            raise PusherViolation(ERR['FORMAT'], f'WELCOME.pixel_formats 0x{pixel_formats:x} is not a non-empty '
                                  f'subset of 0x{OFFERED_FORMATS:x}')
        if session_id == 0:
            raise PusherViolation(0, 'WELCOME.session_id is 0')
        if not MIN_SLOTS <= slot_count <= MAX_SLOTS:
            raise PusherViolation(ERR['GEOMETRY'], f'WELCOME.slot_count {slot_count} out of range {MIN_SLOTS}..{MAX_SLOTS}')
        if not (1 <= max_w <= self.width and 1 <= max_h <= self.height):
            raise PusherViolation(ERR['GEOMETRY'], f'WELCOME.max_width x max_height {max_w}x{max_h} out of range '
                                  f'1x1..{self.width}x{self.height}')
        if slot_bytes % 4096 or slot_bytes < max_w * max_h * 4:
            raise PusherViolation(ERR['GEOMETRY'], f'WELCOME.slot_bytes {slot_bytes} is not a multiple of 4096 >= '
                                  f'{max_w * max_h * 4} (max_width x max_height x 4)')
        if first_slot_offset < RING_HEADER_BYTES or first_slot_offset % 4096:
            raise PusherViolation(ERR['GEOMETRY'], f'WELCOME.first_slot_offset {first_slot_offset} is not a multiple '
                                  f'of 4096 >= {RING_HEADER_BYTES}')
        if first_slot_offset + slot_count * slot_bytes != ring_bytes:
            raise PusherViolation(ERR['GEOMETRY'], f'WELCOME.ring_bytes {ring_bytes} is not first_slot_offset '
                                  f'{first_slot_offset} + {slot_count} slots x {slot_bytes} bytes')
        if not 1 <= fps <= 240:
            raise PusherViolation(0, f'WELCOME.fps {fps} out of range 1..240')
        if hb_ms < 1:
            raise PusherViolation(0, 'WELCOME.heartbeat_interval_ms is 0')
        if timeout_ms <= hb_ms:
            raise PusherViolation(0, f'WELCOME.peer_timeout_ms {timeout_ms} is not greater than '
                                  f'heartbeat_interval_ms {hb_ms}')
        self.w = dict(major=major, minor=minor, caps=caps, session_id=session_id, ring_bytes=ring_bytes,
                      slot_count=slot_count, pixel_formats=pixel_formats, slot_bytes=slot_bytes,
                      first_slot_offset=first_slot_offset, max_w=max_w, max_h=max_h, fps=fps)
        self.heartbeat_ns = hb_ms * NS_PER_MS
        self.peer_timeout_ns = timeout_ms * NS_PER_MS

    def map_ring(self, fd):
        w = self.w
        size = os.fstat(fd).st_size
        if size != w['ring_bytes']:
            raise PusherViolation(ERR['GEOMETRY'], f"the ring memfd is {size} bytes but WELCOME.ring_bytes is "
                                  f"{w['ring_bytes']}")
        try:
            seals = fcntl.fcntl(fd, F_GET_SEALS)
        except OSError:
            seals = -1
        if seals < 0 or seals & 6 != 6:  # F_SEAL_SHRINK 2 | F_SEAL_GROW 4
            raise PusherViolation(0, f"the ring memfd's seals 0x{max(seals, 0):x} lack F_SEAL_SHRINK | F_SEAL_GROW")
        try:
            self.ring = mmap.mmap(fd, w['ring_bytes'], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as e:
            self.fail(f"mmap of the {w['ring_bytes']}-byte ring: {e.strerror}")
        (magic, vmaj, vmin, session_id, slot_count, header_bytes, slot_bytes, first_slot_offset,
         ring_bytes) = RING_S.unpack_from(self.ring, 0)
        if magic != RING_MAGIC:
            raise PusherViolation(ERR['BAD_MAGIC'], f'ring header magic 0x{magic:08x} is not 0x{RING_MAGIC:08x}')
        got = (vmaj, vmin, session_id, slot_count, header_bytes, slot_bytes, first_slot_offset, ring_bytes)
        want = (w['major'], w['minor'], w['session_id'], w['slot_count'], RING_HEADER_BYTES, w['slot_bytes'],
                w['first_slot_offset'], w['ring_bytes'])
        if got != want:
            raise PusherViolation(ERR['GEOMETRY'], 'ring header (version %d.%d, session %d, %d slots, header %d, '
                                  'slot_bytes %d, first_slot_offset %d, ring_bytes %d) disagrees with WELCOME '
                                  '(version %d.%d, session %d, %d slots, header %d, slot_bytes %d, '
                                  'first_slot_offset %d, ring_bytes %d)' % (got + want))
        self.ring_view = memoryview(self.ring)

    # ------------------------------------------------------------ capturing
    def signal_name(self):
        return 'SIGINT' if self.signal == signal.SIGINT else 'SIGTERM'

    def publish_counters(self):
        struct.pack_into('<QQ', self.ring, RING_COUNTERS_OFFSET, self.frames_sent, self.frames_dropped)

    def handle_incoming(self):
        while True:
            m = self.receive()
            if m is None:
                return
            type_, hflags, payload, fds = m
            if not self.check_type_and_descriptors(type_, hflags, fds):
                continue
            if type_ == RELEASE:
                self.expect_size('RELEASE', payload, RELEASE_S.size)
                slot, reserved, seq = RELEASE_S.unpack(payload)
                if reserved:
                    raise PusherViolation(ERR['RESERVED'], f'RELEASE.reserved {reserved} is not 0')
                if slot >= self.w['slot_count']:
                    raise PusherViolation(ERR['BAD_SLOT'], f"RELEASE.slot {slot} out of range 0..{self.w['slot_count'] - 1}")
                if self.owned[slot]:
                    raise PusherViolation(ERR['SLOT_NOT_OWNED'], f'RELEASE.slot {slot} is already the helper\'s')
                if seq != self.slot_seq[slot]:
                    raise PusherViolation(ERR['SEQUENCE'], f'RELEASE.sequence {seq} but slot {slot} holds frame '
                                          f'{self.slot_seq[slot]}')
                self.owned[slot] = True
            elif type_ == CONFIG:
                self.apply_config(payload)
            elif type_ == HEARTBEAT:
                self.expect_size('HEARTBEAT', payload, HEARTBEAT_S.size)
            elif type_ == STOP:
                code, text = self.read_reason('STOP', payload)
                say(f'the pusher asked to stop (reason {code}: {text}); finishing')
                self.finish(FINISH_USER, 'stopped by the pusher')
            elif type_ == ERROR:
                code, text = self.read_reason('ERROR', payload)
                self.fail(f"the pusher reported error {code} ({ERROR_NAMES.get(code, 'unknown code')}): {text}; "
                          f"this helper broke a rule or was too slow, see the pusher's log")
            else:
                raise PusherViolation(ERR['STATE'], f'message type 0x{type_:04x} is not allowed while capturing')

    def apply_config(self, payload):
        self.expect_size('CONFIG', payload, CONFIG_S.size)
        fps, max_w, max_h, flags = CONFIG_S.unpack(payload)
        if not 1 <= max_w <= self.w['max_w']:
            raise PusherViolation(ERR['GEOMETRY'], f"CONFIG.max_width {max_w} out of range 1..{self.w['max_w']}")
        if not 1 <= max_h <= self.w['max_h']:
            raise PusherViolation(ERR['GEOMETRY'], f"CONFIG.max_height {max_h} out of range 1..{self.w['max_h']}")
        if not 1 <= fps <= 240:
            raise PusherViolation(0, f'CONFIG.fps {fps} out of range 1..240')
        if flags & ~CONFIG_CURSOR:
            raise PusherViolation(ERR['RESERVED'], f'CONFIG.flags 0x{flags:x} has bits other than LPC_CONFIG_CURSOR')
        self.config_max = (max_w, max_h)
        # LPC_CONFIG_CURSOR asks for the pointer; this helper has none (and was not granted CURSOR)
        if not self.args.fps_explicit and fps != self.fps:
            self.fps = fps
            self.fps_changed = True

    def produce_frame(self, now):
        w = min(self.width, self.w['max_w'])
        h = min(self.height, self.w['max_h'])
        if self.config_max:
            w, h = min(w, self.config_max[0]), min(h, self.config_max[1])
        count = self.w['slot_count']
        slot = next((s for s in ((self.next_slot + i) % count for i in range(count)) if self.owned[s]), None)
        if slot is None:
            self.frames_dropped += 1
            self.publish_counters()
            return
        slot_bytes = self.w['slot_bytes']
        layout = (make_layout(self.format, w, h, slot_bytes, True) or
                  make_layout(self.format, w, h, slot_bytes, False))
        if layout is None:
            raise PusherViolation(ERR['GEOMETRY'], f"WELCOME.slot_bytes {slot_bytes} cannot hold a {w}x{h} "
                                  f"{self.args.format} frame although it is within max {self.w['max_w']}x{self.w['max_h']}")
        n = self.sequence + 1
        base = self.w['first_slot_offset'] + slot * slot_bytes
        self.painter.draw(self.ring_view[base:base + slot_bytes], self.format, w, h, layout, n)
        strides = [p[1] for p in layout] + [0] * (3 - len(layout))
        offsets = [p[0] for p in layout] + [0] * (3 - len(layout))
        flags = FRAME_FORMAT_CHANGED if (w, h, self.format) != self.last_geometry else 0
        self.owned[slot] = False
        self.slot_seq[slot] = n
        self.next_slot = (slot + 1) % count
        self.sequence = n
        self.send(FRAME, FRAME_S.pack(slot, self.format, n, now, w, h, flags, len(layout), *strides, *offsets))
        self.frames_sent += 1
        self.last_geometry = (w, h, self.format)
        self.publish_counters()

    def wait_until(self, deadline):
        left = deadline - now_ns()
        if left <= 0:
            return
        if left >= NS_PER_MS:
            try:
                ready = self.poller.poll(left // NS_PER_MS)
            except InterruptedError:
                return
            if ready:
                self.handle_incoming()
                return
        left = deadline - now_ns()
        if left > 0:
            time.sleep(left / NS_PER_S)  # Python 3.11+ sleeps with clock_nanosleep(TIMER_ABSTIME) itself

    def run(self):
        w = self.w
        if not w['pixel_formats'] & (1 << self.format):
            say(f'the pusher does not accept pixel format {self.args.format}; try another --format')
            self.finish(FINISH_ERROR, f'the pusher does not accept pixel format {self.args.format}', 1)
        self.audio = self.args.audio and bool(w['caps'] & CAP_AUDIO)
        if self.args.audio and not self.audio:
            say('note: the pusher did not accept audio; sending video only')
        self.fps = self.args.fps if self.args.fps_explicit else w['fps']  # until a CONFIG says otherwise
        self.owned = [True] * w['slot_count']
        self.slot_seq = [0] * w['slot_count']
        self.next_slot = 0
        self.poller = select.poll()
        self.poller.register(self.sock, select.POLLIN)
        if self.audio:
            self.make_sine()

        info = json.dumps({'source': 'pattern', 'helper': HELPER_NAME.decode()}, separators=(',', ':')).encode()
        self.send(START, struct.pack('<I', len(info)) + info)

        t0 = now_ns()
        k = 0
        next_frame = t0
        audio_t0, audio_blocks = t0, 0
        next_audio = audio_t0 + AUDIO_BLOCK_NS if self.audio else float('inf')
        while True:
            if self.signal:
                self.finish(FINISH_USER, f'stopped by {self.signal_name()}')
            now = now_ns()
            if now - self.last_recv >= self.peer_timeout_ns:
                # read what is queued first: after this process was itself stopped for a while,
                # the pusher's ERROR TIMEOUT may be waiting
                self.handle_incoming()
                now = now_ns()
            if now - self.last_recv >= self.peer_timeout_ns:
                raise PusherViolation(ERR['TIMEOUT'], f'pusher hung: no message for {self.peer_timeout_ns // NS_PER_MS} ms')
            if self.fps_changed:
                # the frame already scheduled keeps its time; the new period applies after it
                self.fps_changed = False
                t0, k = next_frame, 0
            if now >= next_frame:
                self.produce_frame(now)
                if self.args.frames and self.frames_sent >= self.args.frames:
                    self.finish(FINISH_USER, 'done')
                k += 1
                next_frame = t0 + k * NS_PER_S // self.fps
                now = now_ns()
                if next_frame <= now:
                    # more than a period late: skip the missed deadlines
                    k = (now - t0) * self.fps // NS_PER_S + 1
                    next_frame = t0 + k * NS_PER_S // self.fps
            if now >= next_audio:
                self.send_audio(audio_t0 + audio_blocks * AUDIO_BLOCK_NS)
                audio_blocks += 1
                next_audio = audio_t0 + (audio_blocks + 1) * AUDIO_BLOCK_NS
                if next_audio + 10 * AUDIO_BLOCK_NS <= now:
                    audio_t0, audio_blocks = now, 0
                    next_audio = audio_t0 + AUDIO_BLOCK_NS
            now = now_ns()
            if now - self.last_send >= self.heartbeat_ns:
                self.send_heartbeat()
            deadline = min(next_frame, next_audio, self.last_send + self.heartbeat_ns,
                           self.last_recv + self.peer_timeout_ns)
            self.wait_until(deadline)

    # ------------------------------------------------------------ audio
    def make_sine(self):
        a = array.array('h')
        for i in range(SINE_PERIOD_FRAMES):
            v = round(0.25 * 32767 * math.sin(2 * math.pi * ((i * SINE_HZ) % AUDIO_RATE) / AUDIO_RATE))
            a.extend((v,) * AUDIO_CHANNELS)
        one = a.tobytes()
        # enough periods that any block is one slice
        reps = (AUDIO_BLOCK_FRAMES + SINE_PERIOD_FRAMES - 1) // SINE_PERIOD_FRAMES + 1
        self.sine = one * reps
        self.frame_bytes = AUDIO_CHANNELS * 2

    def send_audio(self, pts):
        start = (self.audio_frames % SINE_PERIOD_FRAMES) * self.frame_bytes
        pcm = self.sine[start:start + AUDIO_BLOCK_FRAMES * self.frame_bytes]
        self.audio_frames += AUDIO_BLOCK_FRAMES
        self.send(AUDIO, AUDIO_S.pack(AUDIO_S16LE, AUDIO_RATE, AUDIO_CHANNELS, 0, AUDIO_BLOCK_FRAMES, pts) + pcm)

    # ------------------------------------------------------------ main
    def main(self):
        def on_signal(sig, _frame):
            self.signal = sig
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGTERM, on_signal)
        try:
            try:
                self.connect()
                self.last_recv = now_ns()
                self.send_hello()
                self.await_welcome()
                self.run()
            except PusherViolation as v:
                self.violation(v.code, v.text)
        except Exit as e:
            return e.status
        finally:
            self.cleanup()
        return 0


def reject_advice(code):
    return {
        ERR['PEER_UID']: 'run this helper as the same user as the pusher',
        ERR['BUSY']: 'another helper is connected to this group: stop it, or use another group',
        ERR['VERSION']: 'this helper and the pusher speak different major versions: update one of them',
        ERR['FORMAT']: 'the pusher accepts none of BGRX, NV12, I420',
        ERR['GEOMETRY']: 'the pusher refused the frame size: try a smaller --size',
    }.get(code, "see the pusher's log")


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f'{PROG}: {message}; see pattern_helper.py --help', file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    def size(text):
        m = re.fullmatch(r'([0-9]+)x([0-9]+)', text)
        if not m or not (1 <= int(m[1]) <= MAX_DIMENSION and 1 <= int(m[2]) <= MAX_DIMENSION):
            raise argparse.ArgumentTypeError(f"'{text}' is not WxH with each side 1..{MAX_DIMENSION}")
        return int(m[1]), int(m[2])

    def ranged(lo, hi=None):
        def parse(text):
            if not re.fullmatch(r'[0-9]+', text) or int(text) < lo or (hi is not None and int(text) > hi):
                raise argparse.ArgumentTypeError(f"'{text}' is not a whole number " +
                                                 (f'{lo}..{hi}' if hi is not None else f'>= {lo}'))
            return int(text)
        return parse

    def group(text):
        if not GROUP_RE.match(text):
            raise argparse.ArgumentTypeError(f"'{text}' is not a group name: use 1 to 64 of A-Z a-z 0-9 . _ -")
        return text

    p = Parser(prog='pattern_helper.py',
               description='A Capture Link helper that sends a test pattern to the LivePush pusher serving a group.')
    p.add_argument('--group', type=group, metavar='NAME',
                   help='capture group ([A-Za-z0-9._-], 1..64 characters; default: $LIVEPUSH_CAPTURE_GROUP, '
                        'else default: SPEC §3.6)')
    p.add_argument('--size', type=size, default=(640, 360), metavar='WxH', help='frame size (default 640x360)')
    p.add_argument('--fps', type=ranged(1, 240), default=None, metavar='N',
                   help='frame rate 1..240 (default: the rate the pusher asks for, else 30)')
    p.add_argument('--frames', type=ranged(1), default=0, metavar='N',
                   help='send N frames, then finish (default: until SIGINT/SIGTERM or STOP)')
    p.add_argument('--format', choices=sorted(FORMATS), default='bgrx', help='pixel format (default bgrx)')
    p.add_argument('--audio', action='store_true',
                   help='also send a 440 Hz S16LE stereo 48 kHz sine, if the pusher accepts audio')
    p.add_argument('--connect-timeout-ms', type=ranged(0, 24 * 3600 * 1000), default=CONNECT_RETRY_MS_DEFAULT,
                   metavar='N', help='keep retrying to connect this long (default 10000)')
    args = p.parse_args(argv)
    if args.group is None:
        try:
            args.group = group(os.environ.get('LIVEPUSH_CAPTURE_GROUP') or 'default')
        except argparse.ArgumentTypeError as problem:
            p.error(f'$LIVEPUSH_CAPTURE_GROUP: {problem}')
    args.fps_explicit = args.fps is not None
    if args.fps is None:
        args.fps = 30
    return args


def main(argv=None):
    return Helper(parse_args(sys.argv[1:] if argv is None else argv)).main()


if __name__ == '__main__':
    sys.exit(main())
