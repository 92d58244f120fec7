"""Capture Link 1.0 constants and byte layouts (protocol/SPEC.md, livepush_capture.h), and the
checks of what a pusher sends (SPEC §4.4, §5.9-§5.14, §6.4), with no system calls."""
import socket
import struct

VERSION_MAJOR, VERSION_MINOR = 1, 0
MESSAGE_MAGIC, RING_MAGIC = 0x4C43504C, 0x474E524C
MESSAGE_MAX_BYTES, TEXT_MAX_BYTES, START_INFO_MAX_BYTES = 65536, 1024, 4096
GROUP_NAME_MAX, CONNECT_RETRY_MS_DEFAULT = 64, 10000
HEARTBEAT_INTERVAL_MS, PEER_TIMEOUT_MS, LINGER_MS = 1000, 3000, 1000
MIN_SLOTS, MAX_SLOTS, RING_HEADER_BYTES, NO_SLOT = 3, 4, 4096, 0xFFFFFFFF
FLAG_OPTIONAL = 0x0001
MAX_FDS = 4

HELLO, START, FRAME, AUDIO, PAUSE, RESUME, FINISH = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07
HEARTBEAT = 0x40
WELCOME, REJECT, RELEASE, CONFIG, STOP, ERROR = 0x81, 0x82, 0x83, 0x84, 0x85, 0x86
TYPE_NAMES = {HELLO: 'HELLO', START: 'START', FRAME: 'FRAME', AUDIO: 'AUDIO', PAUSE: 'PAUSE', RESUME: 'RESUME',
              FINISH: 'FINISH', HEARTBEAT: 'HEARTBEAT', WELCOME: 'WELCOME', REJECT: 'REJECT', RELEASE: 'RELEASE',
              CONFIG: 'CONFIG', STOP: 'STOP', ERROR: 'ERROR'}

CAP_AUDIO, CAP_DAMAGE, CAP_CURSOR, CAP_SCALE = 0x1, 0x2, 0x4, 0x8  # SCALE: SPEC clarification 28
BGRX, BGRA, RGBX, RGBA, NV12, I420 = 1, 2, 3, 4, 5, 6
S16LE, F32LE = 1, 2
FRAME_UNCHANGED, FRAME_CURSOR, FRAME_FORMAT_CHANGED = 0x1, 0x2, 0x4
CONFIG_CURSOR = 0x1
PAUSE_SCREEN_LOCKED, PAUSE_SOURCE_HIDDEN, PAUSE_REQUESTED = 1, 2, 3
FINISH_USER, FINISH_SOURCE_CLOSED, FINISH_SOURCE_LOST, FINISH_ERROR, FINISH_RESTARTING, FINISH_DONE = 1, 2, 3, 4, 5, 6
ERROR_NAMES = {1: 'BAD_MAGIC', 2: 'BAD_LENGTH', 3: 'UNKNOWN_TYPE', 4: 'VERSION', 5: 'STATE', 6: 'BAD_SLOT',
               7: 'SLOT_NOT_OWNED', 8: 'SEQUENCE', 9: 'GEOMETRY', 10: 'FORMAT', 11: 'DESCRIPTORS', 12: 'TRUNCATED',
               13: 'PEER_UID', 14: 'BUSY', 15: 'TIMEOUT', 16: 'AUDIO', 17: 'TEXT', 18: 'RESERVED'}
ERR = {name: code for code, name in ERROR_NAMES.items()}

# The library's status codes (the same numbers as liblivepush-capture's enum lpc_status).
LPC_OK, LPC_STOPPED, LPC_E_NO_SLOT, LPC_E_CONNECT, LPC_E_REJECTED = 0, -1360, -1361, -1362, -1363
LPC_E_PUSHER_ERROR, LPC_E_CLOSED, LPC_E_TIMEOUT, LPC_E_PROTOCOL = -1364, -1365, -1366, -1367
LPC_E_INVALID, LPC_E_STATE, LPC_E_SYSTEM, LPC_FINISHED = -1368, -1369, -1370, -1371
EVENT_CONFIG = 0x1

HEADER = struct.Struct('<IHHII')
HELLO_S = struct.Struct('<HHIIIIIII32s16s')
WELCOME_S = struct.Struct('<HHIQQIIQQIIIIII')
FRAME_S = struct.Struct('<IIQQIIII3I3I')
AUDIO_S = struct.Struct('<IIHHIQ')
REASON_S = struct.Struct('<II')
HEARTBEAT_S = struct.Struct('<QQQ')
RELEASE_S = struct.Struct('<IIQ')
CONFIG_S = struct.Struct('<IIII')
RING_S = struct.Struct('<IHHQIIQQQ')  # line 0 of the ring header
PAUSE_S = struct.Struct('<I')
COUNTERS_OFFSET = 64  # ring line 1: helper_frames_published, helper_frames_dropped

WELCOME_FIELDS = ('version_major', 'version_minor', 'capabilities', 'session_id', 'ring_bytes', 'slot_count',
                  'pixel_formats', 'slot_bytes', 'first_slot_offset', 'max_width', 'max_height', 'fps',
                  'heartbeat_interval_ms', 'peer_timeout_ms', 'reserved')


class Fault(Exception):
    """A rule the pusher broke: .code (an error code of SPEC §13, 0 if none fits) and the text."""

    def __init__(self, code, text):
        super().__init__(text)
        self.code = code
        self.text = text


def utf8_text(data):
    """SPEC §2.3: UTF-8 without NUL, or None."""
    if b'\0' in data:
        return None
    try:
        return data.decode('utf-8')
    except UnicodeDecodeError:
        return None


def printable(text):
    """Control characters (below 0x20, and 0x7F) replaced by '?' before showing peer text."""
    return ''.join('?' if ord(c) < 0x20 or ord(c) == 0x7F else c for c in text)


def encode(type_, payload=b''):
    return HEADER.pack(MESSAGE_MAGIC, type_, 0, len(payload), 0) + payload


def encode_reason(type_, code, text):
    data = text.encode('utf-8')[:TEXT_MAX_BYTES].decode('utf-8', 'ignore').encode('utf-8')  # whole characters
    return encode(type_, REASON_S.pack(code, len(data)) + data)


def parse(datagram, msg_flags, fd_count):
    """SPEC §4.4 checks 1-7 of a datagram the helper received: (type, payload), or None for an
    ignored optional message; raises Fault."""
    if msg_flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
        raise Fault(ERR['TRUNCATED'], 'message truncated on receipt (%s)' %
                    ('MSG_TRUNC' if msg_flags & socket.MSG_TRUNC else 'MSG_CTRUNC'))
    if len(datagram) < HEADER.size:
        raise Fault(ERR['BAD_LENGTH'], 'datagram of %d bytes is shorter than the 16-byte header' % len(datagram))
    magic, type_, flags, payload_bytes, reserved = HEADER.unpack_from(datagram)
    payload = datagram[HEADER.size:]
    if payload_bytes != len(payload):
        raise Fault(ERR['BAD_LENGTH'], 'header.payload_bytes %d but the datagram holds %d payload bytes'
                    % (payload_bytes, len(payload)))
    if magic != MESSAGE_MAGIC:
        raise Fault(ERR['BAD_MAGIC'], 'header.magic 0x%08x is not 0x%08x' % (magic, MESSAGE_MAGIC))
    if reserved != 0:
        raise Fault(ERR['RESERVED'], 'header.reserved %d is not 0' % reserved)
    name = TYPE_NAMES.get(type_)
    if name is None:
        if flags & FLAG_OPTIONAL:
            return None
        raise Fault(ERR['UNKNOWN_TYPE'], 'header.type 0x%04x is unknown and not marked LPC_FLAG_OPTIONAL' % type_)
    wanted = 1 if type_ == WELCOME else 0
    if fd_count != wanted:
        raise Fault(ERR['DESCRIPTORS'], '%s carried %d descriptor(s), not %d' % (name, fd_count, wanted))
    sizes = {WELCOME: WELCOME_S.size, RELEASE: RELEASE_S.size, CONFIG: CONFIG_S.size, HEARTBEAT: HEARTBEAT_S.size}
    if type_ in sizes:
        if len(payload) != sizes[type_]:
            raise Fault(ERR['BAD_LENGTH'], '%s payload is %d bytes, not %d' % (name, len(payload), sizes[type_]))
    elif type_ in (REJECT, STOP, ERROR):
        if len(payload) < REASON_S.size:
            raise Fault(ERR['BAD_LENGTH'], '%s payload is %d bytes, shorter than 8' % (name, len(payload)))
        _, text_bytes = REASON_S.unpack_from(payload)
        if text_bytes + REASON_S.size != len(payload):
            raise Fault(ERR['BAD_LENGTH'], '%s.text_bytes %d but %d text bytes follow'
                        % (name, text_bytes, len(payload) - REASON_S.size))
        if text_bytes > TEXT_MAX_BYTES:
            raise Fault(ERR['TEXT'], '%s.text_bytes %d exceeds %d' % (name, text_bytes, TEXT_MAX_BYTES))
        if utf8_text(payload[REASON_S.size:]) is None:
            raise Fault(ERR['TEXT'], '%s.text is not valid UTF-8 or holds a NUL' % name)
    else:
        raise Fault(ERR['STATE'], "%s is a helper's message; a pusher never sends it" % name)
    return type_, payload


def reason(payload):
    """(code, printable text) of a parsed REJECT, STOP or ERROR."""
    code, _ = REASON_S.unpack_from(payload)
    return code, printable(payload[REASON_S.size:].decode('utf-8'))


def check_welcome(payload, hello):
    """WELCOME's ranges against the HELLO sent (a dict of its fields); returns WELCOME as a dict."""
    w = dict(zip(WELCOME_FIELDS, WELCOME_S.unpack(payload)))
    caps = hello['capabilities'] & (CAP_AUDIO | CAP_DAMAGE | CAP_CURSOR | CAP_SCALE)
    if w['reserved'] != 0:
        raise Fault(ERR['RESERVED'], 'WELCOME.reserved %d is not 0' % w['reserved'])
    if w['version_major'] != VERSION_MAJOR or w['version_minor'] > VERSION_MINOR:
        raise Fault(ERR['VERSION'], 'WELCOME.version %d.%d, but this helper speaks 1.0'
                    % (w['version_major'], w['version_minor']))
    if w['capabilities'] & ~caps:
        raise Fault(ERR['FORMAT'], "WELCOME.capabilities 0x%x is not a subset of HELLO's 0x%x" % (w['capabilities'], caps))
    if w['pixel_formats'] == 0 or w['pixel_formats'] & ~hello['pixel_formats']:
        raise Fault(ERR['FORMAT'], 'WELCOME.pixel_formats 0x%x is not a non-empty subset of 0x%x'
                    % (w['pixel_formats'], hello['pixel_formats']))
    if w['session_id'] == 0:
        raise Fault(0, 'WELCOME.session_id is 0')
    if not MIN_SLOTS <= w['slot_count'] <= MAX_SLOTS:
        raise Fault(ERR['GEOMETRY'], 'WELCOME.slot_count %d out of range 3..4' % w['slot_count'])
    if not (1 <= w['max_width'] <= hello['max_width'] and 1 <= w['max_height'] <= hello['max_height']):
        raise Fault(ERR['GEOMETRY'], 'WELCOME.max_width x max_height %dx%d out of range 1x1..%dx%d'
                    % (w['max_width'], w['max_height'], hello['max_width'], hello['max_height']))
    largest = w['max_width'] * w['max_height'] * 4
    if w['slot_bytes'] % 4096 or w['slot_bytes'] < largest:
        raise Fault(ERR['GEOMETRY'], 'WELCOME.slot_bytes %d is not a multiple of 4096 >= %d'
                    % (w['slot_bytes'], largest))
    if w['first_slot_offset'] < RING_HEADER_BYTES or w['first_slot_offset'] % 4096:
        raise Fault(ERR['GEOMETRY'], 'WELCOME.first_slot_offset %d is not a multiple of 4096 >= 4096'
                    % w['first_slot_offset'])
    if w['first_slot_offset'] + w['slot_count'] * w['slot_bytes'] != w['ring_bytes']:
        raise Fault(ERR['GEOMETRY'], 'WELCOME.ring_bytes %d is not first_slot_offset + slot_count x slot_bytes'
                    % w['ring_bytes'])
    if not 1 <= w['fps'] <= 240:
        raise Fault(0, 'WELCOME.fps %d out of range 1..240' % w['fps'])
    if w['heartbeat_interval_ms'] < 1 or w['peer_timeout_ms'] <= w['heartbeat_interval_ms']:
        raise Fault(0, 'WELCOME.peer_timeout_ms %d is not greater than heartbeat_interval_ms %d >= 1'
                    % (w['peer_timeout_ms'], w['heartbeat_interval_ms']))
    return w


def check_ring_header(ring, w):
    magic, major, minor, session, slots, header_bytes, slot_bytes, first, ring_bytes = RING_S.unpack_from(ring)
    if magic != RING_MAGIC:
        raise Fault(ERR['BAD_MAGIC'], 'ring header magic 0x%08x is not 0x%08x' % (magic, RING_MAGIC))
    if (major, minor, session) != (w['version_major'], w['version_minor'], w['session_id']):
        raise Fault(0, 'ring header version %d.%d session %d disagrees with WELCOME' % (major, minor, session))
    if (slots, header_bytes, slot_bytes, first, ring_bytes) != (w['slot_count'], RING_HEADER_BYTES, w['slot_bytes'],
                                                                w['first_slot_offset'], w['ring_bytes']):
        raise Fault(ERR['GEOMETRY'], 'ring header geometry (%d slots of %d at %d, header %d, ring %d) disagrees '
                    'with WELCOME' % (slots, slot_bytes, first, header_bytes, ring_bytes))


def check_config(payload, w):
    fps, max_width, max_height, flags = CONFIG_S.unpack(payload)
    if not 1 <= fps <= 240:
        raise Fault(0, 'CONFIG.fps %d out of range 1..240' % fps)
    if not 1 <= max_width <= w['max_width']:
        raise Fault(ERR['GEOMETRY'], 'CONFIG.max_width %d out of range 1..%d' % (max_width, w['max_width']))
    if not 1 <= max_height <= w['max_height']:
        raise Fault(ERR['GEOMETRY'], 'CONFIG.max_height %d out of range 1..%d' % (max_height, w['max_height']))
    return {'fps': fps, 'max_width': max_width, 'max_height': max_height, 'flags': flags & CONFIG_CURSOR}


def check_release(payload, slot_count, borrowed, sequences):
    slot, reserved, sequence = RELEASE_S.unpack(payload)
    if reserved != 0:
        raise Fault(ERR['RESERVED'], 'RELEASE.reserved %d is not 0' % reserved)
    if slot >= slot_count:
        raise Fault(ERR['BAD_SLOT'], 'RELEASE.slot %d out of range 0..%d' % (slot, slot_count - 1))
    if not borrowed[slot]:
        raise Fault(ERR['SLOT_NOT_OWNED'], "RELEASE.slot %d is already the helper's" % slot)
    if sequence != sequences[slot]:
        raise Fault(ERR['SEQUENCE'], 'RELEASE.sequence %d but slot %d holds frame %d' % (sequence, slot, sequences[slot]))
    return slot


def plane_shape(fmt, width, height):
    """[(row_bytes, rows)] per plane of SPEC §8.2, or None for an unknown format."""
    cw, ch = (width + 1) // 2, (height + 1) // 2
    if fmt in (BGRX, BGRA, RGBX, RGBA):
        return [(width * 4, height)]
    if fmt == NV12:
        return [(width, height), (2 * cw, ch)]
    if fmt == I420:
        return [(width, height), (cw, ch), (cw, ch)]
    return None
