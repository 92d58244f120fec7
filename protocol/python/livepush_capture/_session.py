"""The session on the helper's side (SPEC §3.4, §5, §7, §11, §12): connect with retries, HELLO,
WELCOME and the ring, slots, heartbeats and the pusher's timeout, CONFIG, STOP, FINISH."""
import array
import fcntl
import mmap
import os
import re
import select
import socket
import stat
import struct
import time

from . import _wire as w
from ._wire import Fault

STATUS_NAMES = {v: k for k, v in vars(w).items() if k.startswith('LPC_')}


def now_ns():
    """CLOCK_MONOTONIC in ns: the clock of every pts (SPEC §9)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Error(Exception):
    """A failure: .status is the library's status code (w.LPC_E_*), str() says what happened."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.name = STATUS_NAMES.get(status, str(status))


class ConnectError(Error):
    """connect() found no pusher for the group within the retry limit, or could not connect at all
    (.status is LPC_E_CONNECT; the message names the group, the path and the last error)."""

    def __init__(self, message):
        super().__init__(w.LPC_E_CONNECT, message)


def group_from_args(argv=None):
    """The group a starter gave on the command line, as SPEC §3.6 shows it: the argument after
    '--group', or the text after '--group=' (the last one wins); None when there is none, which
    connect() reads as $LIVEPUSH_CAPTURE_GROUP, else 'default'. argv defaults to sys.argv (its
    first item, the program, is skipped). So `my_helper.py --group {group}` works with
    check-helper and livepush: lpc.connect(lpc.group_from_args(), ...)."""
    import sys
    args = list(sys.argv if argv is None else argv)[1:]
    group = None
    i = 0
    while i < len(args):
        if args[i] == '--group' and i + 1 < len(args):
            group = args[i + 1]
            i += 1
        elif args[i].startswith('--group='):
            group = args[i][len('--group='):]
        i += 1
    return group


class SessionEnded(Error):
    """The session is over (STOP, the pusher gone or hung or in violation, or finished)."""

    def __init__(self, status, message, exit_status):
        super().__init__(status, message)
        self.exit_status = exit_status  # what the helper should exit with (SPEC §12.7)


class Frame:
    """A FRAME's picture fields: format, width, height, plane_count, stride[3], plane_offset[3]."""

    def __init__(self, fmt=0, width=0, height=0):
        self.format, self.width, self.height = fmt, width, height
        self.plane_count, self.stride, self.plane_offset = 0, [0, 0, 0], [0, 0, 0]
        self.flags, self.pts_ns, self.sequence = 0, 0, 0


class Slot:
    """A slot the helper owns: .index, .data (a writable memoryview of the whole slot), .frame."""

    def __init__(self, index, data, frame):
        self.index, self.data, self.frame = index, data, frame


def frame_layout(frame, fmt, width, height, slot_bytes):
    """Strides and plane offsets aligned to 64 bytes when that fits slot_bytes, else packed.
    Raises Error(LPC_E_INVALID) saying why when it cannot; the frame is then left as it was."""
    if w.plane_shape(fmt, 1, 1) is None:
        raise Error(w.LPC_E_INVALID, 'format %d is not a pixel format of Capture Link 1.0 (SPEC §8.1: 1 BGRX, 2 BGRA, '
                    '3 RGBX, 4 RGBA, 5 NV12, 6 I420)' % fmt)
    if width < 1 or height < 1:
        raise Error(w.LPC_E_INVALID, 'a frame of %dx%d has no pixels: width and height must be at least 1'
                    % (width, height))
    shape = w.plane_shape(fmt, width, height)
    for align in (64, 1):
        offset, strides, offsets = 0, [0, 0, 0], [0, 0, 0]
        for p, (row_bytes, rows) in enumerate(shape):
            offset = -(-offset // align) * align
            strides[p], offsets[p] = -(-row_bytes // align) * align, offset
            offset += strides[p] * (rows - 1) + row_bytes
        if offset <= slot_bytes:
            frame.format, frame.width, frame.height, frame.plane_count = fmt, width, height, len(shape)
            frame.stride, frame.plane_offset = strides, offsets
            return frame
    raise Error(w.LPC_E_INVALID, 'format %d at %dx%d needs %d bytes but a slot has %d: send a smaller frame '
                '(WELCOME\'s max_width x max_height fits)' % (fmt, width, height, offset, slot_bytes))


def socket_path(group):
    xdg = os.environ.get('XDG_RUNTIME_DIR', '')
    path = '%s/livepush/%s.sock' % (xdg, group) if xdg.startswith('/') else '/tmp/livepush-%d/%s.sock' % (
        os.getuid(), group)
    if len(path.encode()) > 107:
        raise Error(w.LPC_E_INVALID, 'the socket path %s is longer than 107 bytes; use a shorter XDG_RUNTIME_DIR '
                    'or group name' % path)
    return path


def connect(group=None, name='lpc-helper-py', version='1.0', formats=(w.BGRX,), fmt=None, max_size=(1920, 1080),
            capabilities=0, audio_formats=(), connect_retry_ms=0, socket_path_override=None, start_info=None, fps=0):
    """Connects to the pusher of `group` (None: $LIVEPUSH_CAPTURE_GROUP, else 'default'; see
    group_from_args), retrying as SPEC §3.4 says; sends HELLO, checks WELCOME and the ring, maps it,
    sends START. Raises ConnectError (an Error with status LPC_E_CONNECT) when no pusher listens
    within connect_retry_ms, SessionEnded when the pusher refuses (REJECT) or fails the handshake,
    Error(LPC_E_INVALID) for a bad argument."""
    helper = Helper(name, version, formats, fmt if fmt is not None else formats[0], max_size, capabilities,
                    audio_formats, fps)
    group = group or os.environ.get('LIVEPUSH_CAPTURE_GROUP') or 'default'
    if not re.fullmatch(r'[A-Za-z0-9._-]{1,64}', group):
        raise Error(w.LPC_E_INVALID, "group '%s' is not a group name: use 1 to 64 of A-Z a-z 0-9 . _ -" % group)
    helper.group = group
    helper.path = socket_path_override or socket_path(group)
    helper._connect(connect_retry_ms or w.CONNECT_RETRY_MS_DEFAULT)
    helper._hello()
    helper._await_welcome()
    helper._start(start_info if start_info is not None else '{}')
    return helper


class Helper:
    def __init__(self, name, version, formats, fmt, max_size, capabilities, audio_formats, fps):
        self.name, self.version, self.fmt, self.fps = name, version, fmt, fps
        self.pixel_formats = sum(1 << f for f in formats)
        self.audio_formats = sum(1 << f for f in audio_formats)
        self.max_width, self.max_height = max_size
        self.capabilities = capabilities
        if fmt not in formats or self.max_width < 1 or self.max_height < 1 or not 0 <= fps <= 240:
            raise Error(w.LPC_E_INVALID, 'fmt must be one of formats, max_size at least 1x1, fps 0..240')
        self.sock, self.ring, self.welcome, self.config, self.state = None, None, None, None, 'AWAITING_WELCOME'
        self.borrowed, self.acquired, self.sequences = [], None, []
        self.sequence = self.frames_sent = self.frames_dropped = 0
        self.last_frame_pts = self.last_audio_pts = 0  # what FRAME and AUDIO last carried (SPEC §5.3, §5.4)
        self.last = (0, 0, 0)
        self.heartbeat_ns, self.peer_timeout_ns = w.HEARTBEAT_INTERVAL_MS * 10**6, w.PEER_TIMEOUT_MS * 10**6
        self.last_send_ns = self.last_recv_ns = now_ns()
        self.pace = (0, 0, 0)  # (fps, t0_ns, count)
        self.next_slot = 0

    # ---------------------------------------------------------------- ending
    def _end(self, status, message, planned=False, finish=None, linger=True):
        if self.sock is not None:
            if finish is not None and self.state != 'AWAITING_WELCOME':
                try:
                    self._send(w.encode_reason(w.FINISH, finish[0], finish[1]))
                except Error:
                    linger = False
            self._close_socket(linger and finish is not None)
        self.state = 'CLOSED'
        raise SessionEnded(status, message, 0 if planned else 1)

    def _close_socket(self, linger):
        """SPEC §4.7: shut our side and read until the pusher closes (at most 1 s), then close."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + (w.LINGER_MS / 1000 if linger else 0)
            while time.monotonic() < deadline and select.select([self.sock], [], [], deadline - time.monotonic())[0]:
                try:
                    data, anc, _, _ = self.sock.recvmsg(w.MESSAGE_MAX_BYTES, socket.CMSG_SPACE(w.MAX_FDS * 4),
                                                        socket.MSG_DONTWAIT)
                except (BlockingIOError, ConnectionResetError, InterruptedError):
                    continue
                for fd in self._fds(anc):
                    os.close(fd)
                if not data and not anc:
                    break
        except OSError:
            pass
        self.sock.close()
        self.sock = None

    def _fault(self, fault, status=w.LPC_E_PROTOCOL):
        if status == w.LPC_E_TIMEOUT:
            self._end(status, '%s; the pusher is hung or overloaded: restart it' % fault.text,
                      finish=(w.FINISH_ERROR, fault.text), linger=False)
        self._end(status, 'the pusher broke the Capture Link protocol (%s): %s; this is a bug in the pusher'
                  % (w.ERROR_NAMES.get(fault.code, 'rule'), fault.text), finish=(w.FINISH_ERROR, fault.text))

    def _check_open(self):
        if self.state == 'CLOSED':
            raise SessionEnded(w.LPC_FINISHED, 'the session has ended', 1)

    # ---------------------------------------------------------------- sending
    def _send(self, datagram):
        """One datagram; a full socket is waited on for at most peer_timeout_ms (SPEC §4.1)."""
        deadline = now_ns() + self.peer_timeout_ns
        while True:
            try:
                self.sock.send(datagram, socket.MSG_NOSIGNAL | socket.MSG_DONTWAIT)
                self.last_send_ns = now_ns()
                return
            except BlockingIOError:
                if now_ns() >= deadline:
                    raise Error(w.LPC_E_TIMEOUT, 'the pusher read nothing for %d ms: it is hung'
                                % (self.peer_timeout_ns // 10**6))
                select.select([], [self.sock], [], (deadline - now_ns()) / 1e9)
            except InterruptedError:
                continue
            except (BrokenPipeError, ConnectionResetError, OSError) as e:
                raise Error(w.LPC_E_CLOSED, 'the pusher closed the connection (%s)' % e.strerror)

    def _send_message(self, type_, payload=b''):
        try:
            self._send(w.encode(type_, payload))
        except Error as e:
            self._end(e.status, str(e))

    # ---------------------------------------------------------------- receiving
    @staticmethod
    def _fds(anc):
        fds = array.array('i')
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        return list(fds)

    def _receive(self):
        """One datagram without blocking: (type, payload, fd), None when nothing is queued, or
        'IGNORED' for an optional unknown message. Ends the session on EOF or a fault."""
        while True:
            try:
                data, anc, flags, _ = self.sock.recvmsg(w.MESSAGE_MAX_BYTES, socket.CMSG_SPACE(w.MAX_FDS * 4),
                                                        socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
                break
            except (InterruptedError, ConnectionResetError):
                continue  # SPEC §4.5: a reset means keep reading
            except BlockingIOError:
                return None
        fds = self._fds(anc)
        if not data and not fds:
            self._end(w.LPC_E_CLOSED, "the pusher closed the connection %s (group '%s')"
                      % ('before WELCOME' if self.state == 'AWAITING_WELCOME' else 'without STOP', self.group))
        self.last_recv_ns = now_ns()
        try:
            parsed = w.parse(data, flags, len(fds))
        except Fault as fault:
            for fd in fds:
                os.close(fd)
            self._fault(fault)
        if parsed is None:
            for fd in fds:
                os.close(fd)
            return 'IGNORED'
        return parsed[0], parsed[1], (fds[0] if fds else -1)

    def _peer_end(self, payload, status, what):
        code, text = w.reason(payload)
        self.peer_code = code
        self._end(status, '%s %s (%d): %s' % (what, w.ERROR_NAMES.get(code, 'unknown code'), code, text))

    # ---------------------------------------------------------------- starting
    def _connect(self, limit_ms):
        waited_ms, delay_ms, tries = 0, 100, 0
        while True:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
            tries += 1
            try:
                self.sock.connect(self.path)
                break
            except (FileNotFoundError, ConnectionRefusedError, BlockingIOError, InterruptedError) as e:
                self.sock.close()
                if waited_ms >= limit_ms:
                    raise ConnectError("no pusher for group '%s' at %s after %d ms (%d tries): %s; start the pusher "
                                       "with this capture group first" % (self.group, self.path, waited_ms, tries,
                                                                          e.strerror))
            except OSError as e:
                self.sock.close()
                raise ConnectError('cannot connect to %s: %s' % (self.path, e.strerror))
            wait = min(delay_ms, limit_ms - waited_ms)
            time.sleep(wait / 1000)
            waited_ms += wait
            delay_ms = min(delay_ms * 2, 1000)
        pid, uid, _ = struct.unpack('3i', self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            raise ConnectError('the process serving %s (pid %d) runs as uid %d, not as this helper\'s uid %d'
                        % (self.path, pid, uid, os.getuid()))
        st = os.lstat(os.path.dirname(self.path))
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise ConnectError('the socket directory %s is not a private directory of uid %d: remove it and restart '
                               'the pusher' % (os.path.dirname(self.path), os.getuid()))

    def _hello(self):
        name, version = self.name.encode(), self.version.encode()
        if len(name) > 31 or len(version) > 15:
            raise Error(w.LPC_E_INVALID, 'name must be at most 31 bytes of UTF-8 and version at most 15')
        audio = self.audio_formats if self.capabilities & w.CAP_AUDIO else 0
        self.hello = {'capabilities': self.capabilities, 'pixel_formats': self.pixel_formats,
                      'max_width': self.max_width, 'max_height': self.max_height}
        payload = w.HELLO_S.pack(w.VERSION_MAJOR, w.VERSION_MINOR, os.getpid(), self.capabilities, self.pixel_formats,
                                 audio, self.max_width, self.max_height, 0, name, version)
        try:
            self._send(w.encode(w.HELLO, payload))
        except Error as e:
            if e.status != w.LPC_E_CLOSED:  # a REJECT may be queued although HELLO failed (SPEC §3.5)
                raise

    def _await_welcome(self):
        deadline = now_ns() + w.PEER_TIMEOUT_MS * 10**6
        while True:
            got = self._receive()
            if got is None:
                if now_ns() >= deadline:
                    self._end(w.LPC_E_TIMEOUT, 'the pusher at %s answered HELLO with neither WELCOME nor REJECT '
                              'within 3000 ms' % self.path)
                select.select([self.sock], [], [], (deadline - now_ns()) / 1e9)
                continue
            if got == 'IGNORED':
                continue
            type_, payload, fd = got
            if type_ == w.REJECT:
                self._peer_end(payload, w.LPC_E_REJECTED, 'the pusher rejected this helper:')
            if type_ == w.ERROR:
                self._peer_end(payload, w.LPC_E_PUSHER_ERROR, 'the pusher reported error')
            if type_ != w.WELCOME:
                self._fault(Fault(w.ERR['STATE'], 'message type 0x%04x before WELCOME' % type_))
            try:
                self.welcome = w.check_welcome(payload, self.hello)
                self.state = 'CAPTURING'
                self._map(fd)
            except Fault as fault:
                self._fault(fault)
            finally:
                os.close(fd)
            return

    def _map(self, fd):
        wel = self.welcome
        if os.fstat(fd).st_size != wel['ring_bytes']:
            raise Fault(w.ERR['GEOMETRY'], 'the ring memfd is %d bytes but WELCOME.ring_bytes is %d'
                        % (os.fstat(fd).st_size, wel['ring_bytes']))
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        if seals & (fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW) != fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW:
            raise Fault(0, "the ring memfd's seals 0x%x lack F_SEAL_SHRINK | F_SEAL_GROW" % seals)
        self.ring = mmap.mmap(fd, wel['ring_bytes'], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        w.check_ring_header(self.ring, wel)
        self.view = memoryview(self.ring)
        self.borrowed, self.sequences = [False] * wel['slot_count'], [0] * wel['slot_count']
        self.heartbeat_ns = wel['heartbeat_interval_ms'] * 10**6
        self.peer_timeout_ns = wel['peer_timeout_ms'] * 10**6
        self.config = {'fps': wel['fps'], 'max_width': wel['max_width'], 'max_height': wel['max_height'],
                       'flags': w.CONFIG_CURSOR if wel['capabilities'] & w.CAP_CURSOR else 0}
        if not wel['pixel_formats'] & (1 << self.fmt):
            self._end(w.LPC_E_REJECTED, 'the pusher accepts formats 0x%x but not format %d'
                      % (wel['pixel_formats'], self.fmt), finish=(w.FINISH_ERROR, 'pixel format not accepted'))

    def _start(self, info):
        data = info.encode()
        if not (2 <= len(data) <= w.START_INFO_MAX_BYTES and info.startswith('{') and info.endswith('}')):
            raise Error(w.LPC_E_INVALID, 'start_info must be a JSON object of 2..4096 bytes')
        self._send_message(w.START, struct.pack('<I', len(data)) + data)

    # ---------------------------------------------------------------- the loop
    def fileno(self):
        """The socket, for the caller's select/poll (readable)."""
        return self.sock.fileno() if self.sock is not None else -1

    def timeout_ms(self):
        """The longest the caller may wait before calling dispatch() (next heartbeat or timeout)."""
        if self.state == 'CLOSED':
            return 0
        due = min(self.last_send_ns + self.heartbeat_ns, self.last_recv_ns + self.peer_timeout_ns)
        return max(0, -(-(due - now_ns()) // 10**6))

    def dispatch(self):
        """Acts on what the pusher sent, heartbeats, the timeout. Returns event bits (EVENT_CONFIG);
        raises SessionEnded when the session is over."""
        self._check_open()
        events = 0
        while True:
            got = self._receive()
            if got is None:
                break
            if got == 'IGNORED':
                continue
            type_, payload, fd = got
            if fd >= 0:
                os.close(fd)
            try:
                if type_ == w.CONFIG:
                    self.config = w.check_config(payload, self.welcome)
                    events |= w.EVENT_CONFIG
                elif type_ == w.RELEASE:
                    slot = w.check_release(payload, self.welcome['slot_count'], self.borrowed, self.sequences)
                    self.borrowed[slot] = False
                elif type_ == w.STOP:
                    code, text = w.reason(payload)
                    self._end(w.LPC_STOPPED, 'the pusher asked to stop (reason %d: %s)' % (code, text), planned=True,
                              finish=(w.FINISH_USER, 'stopped by the pusher'))
                elif type_ == w.ERROR:
                    self._peer_end(payload, w.LPC_E_PUSHER_ERROR, 'the pusher reported error')
                elif type_ != w.HEARTBEAT:
                    raise Fault(w.ERR['STATE'], 'message type 0x%04x is not allowed after WELCOME' % type_)
            except Fault as fault:
                self._fault(fault)
        now = now_ns()
        if now - self.last_recv_ns >= self.peer_timeout_ns:
            self._fault(Fault(w.ERR['TIMEOUT'], 'pusher hung: no message for %d ms' % ((now - self.last_recv_ns) // 10**6)),
                        w.LPC_E_TIMEOUT)
        if now - self.last_send_ns >= self.heartbeat_ns:
            self._send_message(w.HEARTBEAT, w.HEARTBEAT_S.pack(now, self.frames_sent, self.frames_dropped))
        return events

    def wait_frame(self):
        """Waits, dispatching, until the next frame is due at the current fps; returns event bits."""
        events = self.dispatch()
        fps = self.fps or self.config['fps']
        now = now_ns()
        if self.pace[0] != fps:
            self.pace = (fps, now, 0)
        rate, t0, count = self.pace
        due = t0 + count * 10**9 // rate
        if due + 10**9 // rate <= now:
            t0, count, due = now, 0, now
        while now_ns() < due:
            select.select([self.sock], [], [], min((due - now_ns()) / 1e9, self.timeout_ms() / 1000))
            events |= self.dispatch()
            if not self.fps and self.config['fps'] != rate:
                break
        self.pace = (rate, t0, count + 1)
        return events

    # ---------------------------------------------------------------- frames
    def acquire(self):
        """A Slot the helper owns with a frame of `fmt` at the size wanted now, or None when every slot
        is with the pusher (the frame is dropped and counted, SPEC §7.5)."""
        self._check_open()
        if self.state != 'CAPTURING':
            raise Error(w.LPC_E_STATE, 'no frames while paused (SPEC §12.4): resume first')
        count = self.welcome['slot_count']
        index = self.acquired
        if index is None:
            index = next((i % count for i in range(self.next_slot, self.next_slot + count)
                          if not self.borrowed[i % count]), None)
        if index is None:
            self.frames_dropped += 1
            self._publish()
            return None
        self.acquired = index
        width, height = self.target_size()
        frame = frame_layout(Frame(), self.fmt, width, height, self.welcome['slot_bytes'])
        frame.pts_ns, frame.sequence = now_ns(), self.sequence + 1
        start = self.welcome['first_slot_offset'] + index * self.welcome['slot_bytes']
        return Slot(index, self.view[start:start + self.welcome['slot_bytes']], frame)

    def target_size(self):
        """The size acquire() lays out: max_size (your source's size) fitted into CONFIG's maximum. With
        CAP_SCALE granted the whole source is fitted, its aspect ratio kept (SPEC §12.5: each side
        rounded to the nearest pixel, at least 1); without it each side is capped on its own (crop)."""
        sw, sh = self.max_width, self.max_height
        cw, ch = self.config['max_width'], self.config['max_height']
        if not self.welcome['capabilities'] & w.CAP_SCALE or (sw <= cw and sh <= ch):
            return min(sw, cw), min(sh, ch)
        if sw * ch <= sh * cw:
            return max(1, (sw * ch * 2 + sh) // (sh * 2)), max(1, ch)
        return max(1, cw), max(1, (sh * cw * 2 + sw) // (sw * 2))

    def submit(self, slot):
        """Sends FRAME for an acquired slot after checking it against the session; the slot is then
        the pusher's. Raises Error(LPC_E_INVALID) naming the field for a frame that breaks a rule."""
        self._check_open()
        if self.state != 'CAPTURING':
            raise Error(w.LPC_E_STATE, 'no FRAME while paused (SPEC §12.4): resume first')
        if slot.index != self.acquired:
            raise Error(w.LPC_E_INVALID, 'the slot was not acquired with acquire() (or was sent)')
        f, wel = slot.frame, self.welcome
        shape = w.plane_shape(f.format, f.width, f.height)
        if shape is None or not wel['pixel_formats'] & (1 << f.format):
            raise Error(w.LPC_E_INVALID, 'FRAME.format %d is not in WELCOME.pixel_formats 0x%x'
                        % (f.format, wel['pixel_formats']))
        if not (1 <= f.width <= wel['max_width'] and 1 <= f.height <= wel['max_height']):
            raise Error(w.LPC_E_INVALID, 'FRAME size %dx%d out of range 1x1..%dx%d'
                        % (f.width, f.height, wel['max_width'], wel['max_height']))
        for p, (row_bytes, rows) in enumerate(shape):
            if f.stride[p] < row_bytes or f.plane_offset[p] + f.stride[p] * (rows - 1) + row_bytes > wel['slot_bytes']:
                raise Error(w.LPC_E_INVALID, 'FRAME plane %d (offset %d, stride %d) does not fit the slot'
                            % (p, f.plane_offset[p], f.stride[p]))
        pts = f.pts_ns or now_ns()
        if pts < self.last_frame_pts:  # the pusher would end the session with SEQUENCE (SPEC §5.3)
            raise Error(w.LPC_E_INVALID, "this helper's frame breaks a rule (SEQUENCE): FRAME.pts_ns %d is before the "
                        "previous frame's %d; nothing was sent (pts_ns never goes back: stamp frames with now_ns() at "
                        "capture)" % (pts, self.last_frame_pts))
        flags = f.flags & (w.FRAME_CURSOR | w.FRAME_FORMAT_CHANGED)
        if (f.format, f.width, f.height) != self.last:
            flags |= w.FRAME_FORMAT_CHANGED
        sequence = self.sequence + 1
        self._send_message(w.FRAME, w.FRAME_S.pack(slot.index, f.format, sequence, pts, f.width,
                                                   f.height, flags, len(shape), *f.stride, *f.plane_offset))
        self.last_frame_pts = pts
        self.borrowed[slot.index], self.sequences[slot.index] = True, sequence
        self.acquired, self.sequence, self.next_slot = None, sequence, (slot.index + 1) % wel['slot_count']
        self.frames_sent += 1
        self.last = (f.format, f.width, f.height)
        self._publish()

    def _publish(self):
        struct.pack_into('<QQ', self.ring, w.COUNTERS_OFFSET, self.frames_sent, self.frames_dropped)

    # ---------------------------------------------------------------- audio, pause, finish
    def send_audio(self, fmt, rate_hz, channels, pcm, pts_ns=0):
        """AUDIO with interleaved PCM bytes (LPC_CAP_AUDIO granted, fmt in audio_formats)."""
        self._check_open()
        sample = {w.S16LE: 2, w.F32LE: 4}.get(fmt)
        if not self.welcome['capabilities'] & w.CAP_AUDIO or sample is None or not self.audio_formats & (1 << fmt):
            raise Error(w.LPC_E_STATE, 'AUDIO format %d was not granted' % fmt)
        frames = len(pcm) // (sample * channels) if channels else 0
        if (not 8000 <= rate_hz <= 192000 or not 1 <= channels <= 8 or frames < 1 or frames * sample * channels
                != len(pcm) or len(pcm) > w.MESSAGE_MAX_BYTES - 40):
            raise Error(w.LPC_E_INVALID, 'AUDIO of %d Hz, %d channels, %d bytes is outside 8000..192000 Hz, 1..8 '
                        'channels, whole frames, 65496 bytes' % (rate_hz, channels, len(pcm)))
        pts = pts_ns or now_ns()
        if pts < self.last_audio_pts:  # the pusher would end the session with AUDIO (SPEC §5.4)
            raise Error(w.LPC_E_INVALID, "this helper's AUDIO breaks a rule (AUDIO): AUDIO.pts_ns %d is before the "
                        "previous AUDIO's %d; nothing was sent (stamp each block with its first sample's capture "
                        "time)" % (pts, self.last_audio_pts))
        self._send_message(w.AUDIO, w.AUDIO_S.pack(fmt, rate_hz, channels, 0, frames, pts) + bytes(pcm))
        self.last_audio_pts = pts

    def pause(self, reason=w.PAUSE_REQUESTED):
        self._check_open()
        if self.state != 'CAPTURING':
            raise Error(w.LPC_E_STATE, 'PAUSE only while capturing')
        self._send_message(w.PAUSE, w.PAUSE_S.pack(reason))
        self.state = 'PAUSED'

    def resume(self):
        self._check_open()
        if self.state != 'PAUSED':
            raise Error(w.LPC_E_STATE, 'RESUME only while paused')
        self._send_message(w.RESUME)
        self.state, self.last = 'CAPTURING', (0, 0, 0)

    def finish(self, code=w.FINISH_USER, text=''):
        """Ends the session: FINISH {code, text}, then close cleanly (SPEC §4.7). Returns the exit status."""
        if self.state == 'CLOSED':
            return 1
        try:
            planned = code in (w.FINISH_USER, w.FINISH_DONE, w.FINISH_SOURCE_CLOSED)  # SPEC §12.9
            self._end(w.LPC_FINISHED, 'finished (reason %d: %s)' % (code, text), planned=planned, finish=(code, text))
        except SessionEnded as end:
            return end.exit_status

    def close(self):
        """Finishes (FINISH_USER) if still open, unmaps the ring."""
        if self.state != 'CLOSED' and self.sock is not None:
            self.finish(w.FINISH_USER, 'closed')
        if self.ring is not None:
            try:
                self.view.release()
                self.ring.close()
            except BufferError:
                pass  # the caller still holds a slot's memoryview: the mapping goes with it
            self.ring = None
