"""hostile_cases.py: hostile_helper.py's cases, one rule broken each, registered in CASES in the
order --list prints them. Python 3, standard library only.
"""
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_link import *  # noqa: E402,F401,F403


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
    give_up = time.monotonic() + Settings.timeout_s
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
    return f'{sent} FRAMEs sent, {refused} refused; the pusher never closed the connection in {Settings.timeout_s:g} s'


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
    signal.alarm(int(Settings.timeout_s) + 2)  # a send blocked for good (the deadlock) ends here
    try:
        print(flood_frames(l, blocking=True), file=sys.stderr)
    except TimeoutError:
        print(f'blocked in send for {Settings.timeout_s:g} s: the pusher stopped reading (a deadlock)')
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
