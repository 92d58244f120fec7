"""capture_link_wire.py: the wire side of pattern_helper.py, the reference Capture Link helper in
Python 3 (standard library only): the protocol's constants and message layouts
(protocol/livepush_capture.h), and `Wire`, the messages sent and received on the session socket
with their checks, the handshake (HELLO, WELCOME, the pusher's identity) and the ring's mapping.
`Wire` is the base of pattern_helper's `Helper`, whose state (the socket, the timeouts, the
ring) and reactions (`fail`, `violation`, `finish`) it uses; read the two together.
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



def reject_advice(code):
    return {
        ERR['PEER_UID']: 'run this helper as the same user as the pusher',
        ERR['BUSY']: 'another helper is connected to this group: stop it, or use another group',
        ERR['VERSION']: 'this helper and the pusher speak different major versions: update one of them',
        ERR['FORMAT']: 'the pusher accepts none of BGRX, NV12, I420',
        ERR['GEOMETRY']: 'the pusher refused the frame size: try a smaller --size',
    }.get(code, "see the pusher's log")


class Wire:
    """Messages on the session socket, the handshake and the ring (see the module's text)."""

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
