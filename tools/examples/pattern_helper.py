#!/usr/bin/env python3
"""pattern_helper.py: a reference Capture Link capture helper in Python 3 (standard library only).

The same helper as pattern-helper.c: it speaks the helper's side of Capture Link v1
(protocol/SPEC.md, protocol/livepush_capture.h) and sends a test pattern that a pusher
or a test can check pixel by pixel, and in which a torn frame shows at once. The protocol's
constants, the messages and the handshake are in capture_link_wire.py beside it (`Wire`, the base
of `Helper` here); this file is the pattern, the helper's states and its command line.

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


# The protocol's constants, the messages and the handshake: capture_link_wire.py, beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_link_wire import *  # noqa: E402,F401,F403  (constants, now_ns, say, Exit, Wire, ...)


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


class Helper(Wire):
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
