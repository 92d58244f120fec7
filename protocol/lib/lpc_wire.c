/*
 * lpc_wire.c: liblivepush-capture's checks of what the pusher sends, and the encoders of what
 * the helper sends. No system calls here: tools/fuzz/run feeds lpc_wire_parse() and the
 * payload checks arbitrary bytes under libFuzzer.
 */
#include "lpc_wire.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

void lpc_fault_set(lpc_fault *f, uint32_t code, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    f->code = code;
    vsnprintf(f->text, sizeof f->text, format, ap);
    va_end(ap);
}

bool lpc_wire_utf8(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp, min;
        if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1Fu; min = 0x80; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0Fu; min = 0x800; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07u; min = 0x10000; }
        else return false;
        if (n - i < len)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

static const char *type_name(uint16_t type)
{
    switch (type) {
    case LPC_HELLO: return "HELLO";
    case LPC_START: return "START";
    case LPC_FRAME: return "FRAME";
    case LPC_AUDIO: return "AUDIO";
    case LPC_PAUSE: return "PAUSE";
    case LPC_RESUME: return "RESUME";
    case LPC_FINISH: return "FINISH";
    case LPC_HEARTBEAT: return "HEARTBEAT";
    case LPC_WELCOME: return "WELCOME";
    case LPC_REJECT: return "REJECT";
    case LPC_RELEASE: return "RELEASE";
    case LPC_CONFIG: return "CONFIG";
    case LPC_STOP: return "STOP";
    case LPC_ERROR: return "ERROR";
    default: return NULL;
    }
}

static int exact_size(const lpc_message *m, size_t size, lpc_fault *f)
{
    if (m->payload_bytes == size)
        return LPC_PARSE_OK;
    lpc_fault_set(f, LPC_ERR_BAD_LENGTH, "%s payload is %" PRIu32 " bytes, not %zu", type_name(m->type),
                  m->payload_bytes, size);
    return LPC_PARSE_FAULT;
}

static int reason_size(const lpc_message *m, lpc_fault *f)
{
    const char *name = type_name(m->type);
    lpc_reason r;
    if (m->payload_bytes < sizeof r) {
        lpc_fault_set(f, LPC_ERR_BAD_LENGTH, "%s payload is %" PRIu32 " bytes, shorter than 8", name,
                      m->payload_bytes);
        return LPC_PARSE_FAULT;
    }
    memcpy(&r, m->payload, sizeof r);
    if ((uint64_t)r.text_bytes + sizeof r != m->payload_bytes) {
        lpc_fault_set(f, LPC_ERR_BAD_LENGTH, "%s.text_bytes %" PRIu32 " but %" PRIu32 " text bytes follow", name,
                      r.text_bytes, m->payload_bytes - (uint32_t)sizeof r);
        return LPC_PARSE_FAULT;
    }
    if (r.text_bytes > LPC_TEXT_MAX_BYTES) {
        lpc_fault_set(f, LPC_ERR_TEXT, "%s.text_bytes %" PRIu32 " exceeds %u", name, r.text_bytes,
                      LPC_TEXT_MAX_BYTES);
        return LPC_PARSE_FAULT;
    }
    if (!lpc_wire_utf8(m->payload + sizeof r, r.text_bytes)) {
        lpc_fault_set(f, LPC_ERR_TEXT, "%s.text is not valid UTF-8 or holds a NUL", name);
        return LPC_PARSE_FAULT;
    }
    return LPC_PARSE_OK;
}

int lpc_wire_parse(const uint8_t *datagram, size_t bytes, int msg_flags, int fd_count, lpc_message *m,
                   lpc_fault *f)
{
    memset(m, 0, sizeof *m);
    if (msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
        lpc_fault_set(f, LPC_ERR_TRUNCATED, "message truncated on receipt (%s): at most %u bytes and %d descriptors",
                      (msg_flags & MSG_TRUNC) ? "MSG_TRUNC" : "MSG_CTRUNC", LPC_MESSAGE_MAX_BYTES, LPC_WIRE_MAX_FDS);
        return LPC_PARSE_FAULT;
    }
    lpc_header header;
    if (bytes < sizeof header) {
        lpc_fault_set(f, LPC_ERR_BAD_LENGTH, "datagram of %zu bytes is shorter than the 16-byte header", bytes);
        return LPC_PARSE_FAULT;
    }
    memcpy(&header, datagram, sizeof header);
    if ((uint64_t)header.payload_bytes + sizeof header != bytes) {
        lpc_fault_set(f, LPC_ERR_BAD_LENGTH, "header.payload_bytes %" PRIu32 " but the datagram holds %zu payload bytes",
                      header.payload_bytes, bytes - sizeof header);
        return LPC_PARSE_FAULT;
    }
    if (header.magic != LPC_MESSAGE_MAGIC) {
        lpc_fault_set(f, LPC_ERR_BAD_MAGIC, "header.magic 0x%08" PRIx32 " is not 0x%08x", header.magic,
                      LPC_MESSAGE_MAGIC);
        return LPC_PARSE_FAULT;
    }
    if (header.reserved != 0) {
        lpc_fault_set(f, LPC_ERR_RESERVED, "header.reserved %" PRIu32 " is not 0", header.reserved);
        return LPC_PARSE_FAULT;
    }
    m->type = header.type;
    m->flags = header.flags;
    m->payload = datagram + sizeof header;
    m->payload_bytes = header.payload_bytes;
    const char *name = type_name(header.type);
    if (name == NULL) {
        if (header.flags & LPC_FLAG_OPTIONAL)
            return LPC_PARSE_IGNORE;
        lpc_fault_set(f, LPC_ERR_UNKNOWN_TYPE, "header.type 0x%04x is unknown and not marked LPC_FLAG_OPTIONAL",
                      header.type);
        return LPC_PARSE_FAULT;
    }
    int wanted_fds = header.type == LPC_WELCOME ? 1 : 0;
    if (fd_count != wanted_fds) {
        lpc_fault_set(f, LPC_ERR_DESCRIPTORS, "%s carried %d descriptor(s), not %d", name, fd_count, wanted_fds);
        return LPC_PARSE_FAULT;
    }
    switch (header.type) {
    case LPC_WELCOME: return exact_size(m, sizeof(lpc_welcome), f);
    case LPC_RELEASE: return exact_size(m, sizeof(lpc_release), f);
    case LPC_CONFIG: return exact_size(m, sizeof(lpc_config), f);
    case LPC_HEARTBEAT: return exact_size(m, sizeof(lpc_heartbeat), f);
    case LPC_REJECT: case LPC_STOP: case LPC_ERROR: return reason_size(m, f);
    default:
        lpc_fault_set(f, LPC_ERR_STATE, "%s is a helper's message; a pusher never sends it", name);
        return LPC_PARSE_FAULT;
    }
}

void lpc_wire_reason(const lpc_message *m, uint32_t *code, char *text, size_t cap)
{
    lpc_reason r;
    memcpy(&r, m->payload, sizeof r);
    *code = r.code;
    size_t j = 0;
    const uint8_t *src = m->payload + sizeof r;
    for (uint32_t i = 0; i < r.text_bytes && j + 1 < cap; i++)
        text[j++] = (src[i] < 0x20 || src[i] == 0x7F) ? '?' : (char)src[i];
    if (cap > 0)
        text[j] = '\0';
}

bool lpc_wire_welcome(const lpc_message *m, const lpc_hello *hello, lpc_welcome *w, lpc_fault *f)
{
    memcpy(w, m->payload, sizeof *w);
    const uint32_t caps = LPC_CAP_AUDIO | LPC_CAP_DAMAGE | LPC_CAP_CURSOR | LPC_CAP_SCALE;
    if (w->reserved != 0)
        lpc_fault_set(f, LPC_ERR_RESERVED, "WELCOME.reserved %" PRIu32 " is not 0", w->reserved);
    else if (w->version_major != LPC_VERSION_MAJOR || w->version_minor > hello->version_minor)
        lpc_fault_set(f, LPC_ERR_VERSION, "WELCOME.version %u.%u, but this helper speaks %u.%u", w->version_major,
                      w->version_minor, hello->version_major, hello->version_minor);
    else if (w->capabilities & ~(hello->capabilities & caps))
        lpc_fault_set(f, LPC_ERR_FORMAT, "WELCOME.capabilities 0x%" PRIx32 " is not a subset of HELLO's 0x%" PRIx32,
                      w->capabilities, hello->capabilities & caps);
    else if (w->pixel_formats == 0 || (w->pixel_formats & ~hello->pixel_formats) != 0)
        lpc_fault_set(f, LPC_ERR_FORMAT, "WELCOME.pixel_formats 0x%" PRIx32 " is not a non-empty subset of 0x%" PRIx32,
                      w->pixel_formats, hello->pixel_formats);
    else if (w->session_id == 0)
        lpc_fault_set(f, 0, "WELCOME.session_id is 0");
    else if (w->slot_count < LPC_MIN_SLOTS || w->slot_count > LPC_MAX_SLOTS)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "WELCOME.slot_count %" PRIu32 " out of range %u..%u", w->slot_count,
                      LPC_MIN_SLOTS, LPC_MAX_SLOTS);
    else if (w->max_width < 1 || w->max_width > hello->max_width || w->max_height < 1 ||
             w->max_height > hello->max_height)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "WELCOME.max_width x max_height %" PRIu32 "x%" PRIu32
                      " out of range 1x1..%" PRIu32 "x%" PRIu32, w->max_width, w->max_height, hello->max_width,
                      hello->max_height);
    else if (w->slot_bytes % 4096 != 0 || w->slot_bytes < (uint64_t)w->max_width * w->max_height * 4)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "WELCOME.slot_bytes %" PRIu64 " is not a multiple of 4096 >= %" PRIu64
                      " (max_width x max_height x 4)", w->slot_bytes, (uint64_t)w->max_width * w->max_height * 4);
    else if (w->first_slot_offset < LPC_RING_HEADER_BYTES || w->first_slot_offset % 4096 != 0)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "WELCOME.first_slot_offset %" PRIu64 " is not a multiple of 4096 >= %u",
                      w->first_slot_offset, LPC_RING_HEADER_BYTES);
    else if (w->slot_bytes > (UINT64_MAX - w->first_slot_offset) / w->slot_count ||
             w->first_slot_offset + (uint64_t)w->slot_count * w->slot_bytes != w->ring_bytes)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "WELCOME.ring_bytes %" PRIu64 " is not first_slot_offset %" PRIu64
                      " + %" PRIu32 " slots x %" PRIu64 " bytes", w->ring_bytes, w->first_slot_offset, w->slot_count,
                      w->slot_bytes);
    else if (w->fps < 1 || w->fps > 240)
        lpc_fault_set(f, 0, "WELCOME.fps %" PRIu32 " out of range 1..240", w->fps);
    else if (w->heartbeat_interval_ms < 1 || w->peer_timeout_ms <= w->heartbeat_interval_ms)
        lpc_fault_set(f, 0, "WELCOME.peer_timeout_ms %" PRIu32 " is not greater than heartbeat_interval_ms %" PRIu32
                      " >= 1", w->peer_timeout_ms, w->heartbeat_interval_ms);
    else
        return true;
    return false;
}

bool lpc_wire_config(const lpc_message *m, const lpc_welcome *w, lpc_config *c, lpc_fault *f)
{
    memcpy(c, m->payload, sizeof *c);
    if (c->fps < 1 || c->fps > 240)
        lpc_fault_set(f, 0, "CONFIG.fps %" PRIu32 " out of range 1..240", c->fps);
    else if (c->max_width < 1 || c->max_width > w->max_width)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "CONFIG.max_width %" PRIu32 " out of range 1..%" PRIu32, c->max_width,
                      w->max_width);
    else if (c->max_height < 1 || c->max_height > w->max_height)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "CONFIG.max_height %" PRIu32 " out of range 1..%" PRIu32, c->max_height,
                      w->max_height);
    else {
        c->flags &= LPC_CONFIG_CURSOR; /* SPEC §5.12: unknown bits of a 1.0 session are ignored */
        return true;
    }
    return false;
}

bool lpc_wire_release(const lpc_message *m, uint32_t slot_count, const bool *borrowed, const uint64_t *sequence,
                      lpc_release *r, lpc_fault *f)
{
    memcpy(r, m->payload, sizeof *r);
    if (r->reserved != 0)
        lpc_fault_set(f, LPC_ERR_RESERVED, "RELEASE.reserved %" PRIu32 " is not 0", r->reserved);
    else if (r->slot >= slot_count)
        lpc_fault_set(f, LPC_ERR_BAD_SLOT, "RELEASE.slot %" PRIu32 " out of range 0..%" PRIu32, r->slot,
                      slot_count - 1);
    else if (!borrowed[r->slot])
        lpc_fault_set(f, LPC_ERR_SLOT_NOT_OWNED, "RELEASE.slot %" PRIu32 " is already the helper's", r->slot);
    else if (r->sequence != sequence[r->slot])
        lpc_fault_set(f, LPC_ERR_SEQUENCE, "RELEASE.sequence %" PRIu64 " but slot %" PRIu32 " holds frame %" PRIu64,
                      r->sequence, r->slot, sequence[r->slot]);
    else
        return true;
    return false;
}

bool lpc_wire_ring_header(const void *ring, const lpc_welcome *w, lpc_fault *f)
{
    lpc_ring_header rh;
    memcpy(&rh, ring, sizeof rh);
    if (rh.magic != LPC_RING_MAGIC)
        lpc_fault_set(f, LPC_ERR_BAD_MAGIC, "ring header magic 0x%08" PRIx32 " is not 0x%08x", rh.magic,
                      LPC_RING_MAGIC);
    else if (rh.version_major != w->version_major || rh.version_minor != w->version_minor)
        lpc_fault_set(f, LPC_ERR_VERSION, "ring header version %u.%u but WELCOME.version %u.%u", rh.version_major,
                      rh.version_minor, w->version_major, w->version_minor);
    else if (rh.session_id != w->session_id)
        lpc_fault_set(f, 0, "ring header session_id %" PRIu64 " but WELCOME.session_id %" PRIu64, rh.session_id,
                      w->session_id);
    else if (rh.slot_count != w->slot_count || rh.slot_bytes != w->slot_bytes ||
             rh.first_slot_offset != w->first_slot_offset || rh.ring_bytes != w->ring_bytes ||
             rh.header_bytes != LPC_RING_HEADER_BYTES)
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "ring header (%" PRIu32 " slots of %" PRIu64 " at %" PRIu64 ", header %"
                      PRIu32 ", ring %" PRIu64 ") disagrees with WELCOME (%" PRIu32 " slots of %" PRIu64 " at %" PRIu64
                      ", header 4096, ring %" PRIu64 ")", rh.slot_count, rh.slot_bytes, rh.first_slot_offset,
                      rh.header_bytes, rh.ring_bytes, w->slot_count, w->slot_bytes, w->first_slot_offset,
                      w->ring_bytes);
    else
        return true;
    return false;
}

/* Rows and row bytes of each plane (SPEC §8.2); 0 planes for an unknown format. */
static uint32_t plane_shape(uint32_t format, uint32_t width, uint32_t height, uint64_t row_bytes[3], uint64_t rows[3])
{
    uint64_t cw = ((uint64_t)width + 1) / 2, ch = ((uint64_t)height + 1) / 2;
    switch (format) {
    case LPC_FORMAT_BGRX: case LPC_FORMAT_BGRA: case LPC_FORMAT_RGBX: case LPC_FORMAT_RGBA:
        row_bytes[0] = (uint64_t)width * 4;
        rows[0] = height;
        return 1;
    case LPC_FORMAT_NV12:
        row_bytes[0] = width;
        rows[0] = height;
        row_bytes[1] = 2 * cw;
        rows[1] = ch;
        return 2;
    case LPC_FORMAT_I420:
        row_bytes[0] = width;
        rows[0] = height;
        row_bytes[1] = row_bytes[2] = cw;
        rows[1] = rows[2] = ch;
        return 3;
    default:
        return 0;
    }
}

static uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

/* The layout of a frame into `out` (aligned to 64 bytes when that fits, else packed); the bytes
 * the packed layout needs in *needed. 0 planes when the format is unknown or a side is 0. */
static uint32_t layout(lpc_frame *out, uint32_t format, uint32_t width, uint32_t height, uint64_t slot_bytes,
                       uint64_t *needed)
{
    uint64_t row_bytes[3] = {0}, rows[3] = {0};
    uint32_t planes = plane_shape(format, width, height, row_bytes, rows);
    *needed = 0;
    if (planes == 0 || width == 0 || height == 0)
        return 0;
    for (int aligned = 1; aligned >= 0; aligned--) {
        lpc_frame f = *out;
        uint64_t offset = 0;
        for (uint32_t p = 0; p < 3; p++) {
            f.stride[p] = 0;
            f.plane_offset[p] = 0;
        }
        for (uint32_t p = 0; p < planes; p++) {
            uint64_t stride = aligned ? round_up(row_bytes[p], 64) : row_bytes[p];
            offset = aligned ? round_up(offset, 64) : offset;
            f.stride[p] = (uint32_t)stride;
            f.plane_offset[p] = (uint32_t)offset;
            offset += stride * (rows[p] - 1) + row_bytes[p];
        }
        *needed = offset;
        if (offset <= slot_bytes && offset <= UINT32_MAX) {
            f.format = format;
            f.width = width;
            f.height = height;
            f.plane_count = planes;
            *out = f;
            return planes;
        }
    }
    return 0;
}

int lpc_frame_layout(lpc_frame *frame, uint32_t format, uint32_t width, uint32_t height, uint64_t slot_bytes)
{
    uint64_t needed;
    if (frame == NULL)
        return LPC_E_INVALID;
    lpc_frame f = *frame; /* changed only when the layout fits */
    if (layout(&f, format, width, height, slot_bytes, &needed) == 0)
        return LPC_E_INVALID;
    *frame = f;
    return LPC_OK;
}

const char *lpc_frame_layout_problem(char *buffer, size_t size, uint32_t format, uint32_t width, uint32_t height,
                                     uint64_t slot_bytes)
{
    uint64_t row_bytes[3], rows[3], needed;
    lpc_frame scratch = {0};
    if (buffer == NULL || size == 0)
        return NULL;
    if (plane_shape(format, 1, 1, row_bytes, rows) == 0)
        snprintf(buffer, size, "format %" PRIu32 " is not a pixel format of Capture Link 1.0 (SPEC §8.1: 1 BGRX, "
                 "2 BGRA, 3 RGBX, 4 RGBA, 5 NV12, 6 I420)", format);
    else if (width == 0 || height == 0)
        snprintf(buffer, size, "a frame of %" PRIu32 "x%" PRIu32 " has no pixels: width and height must be at least 1",
                 width, height);
    else if (layout(&scratch, format, width, height, slot_bytes, &needed) == 0)
        snprintf(buffer, size, "format %" PRIu32 " at %" PRIu32 "x%" PRIu32 " needs %" PRIu64 " bytes but a slot has %"
                 PRIu64 ": send a smaller frame (WELCOME's max_width x max_height fits)", format, width, height, needed,
                 slot_bytes);
    else
        return NULL;
    return buffer;
}

bool lpc_wire_check_frame(const lpc_frame *frame, const lpc_welcome *w, lpc_fault *f)
{
    uint64_t row_bytes[3] = {0}, rows[3] = {0};
    uint32_t planes = plane_shape(frame->format, frame->width, frame->height, row_bytes, rows);
    if (frame->format > 31 || !(w->pixel_formats & LPC_FORMAT_BIT(frame->format))) {
        lpc_fault_set(f, LPC_ERR_FORMAT, "FRAME.format %" PRIu32 " is not in WELCOME.pixel_formats 0x%" PRIx32,
                      frame->format, w->pixel_formats);
        return false;
    }
    if (frame->width < 1 || frame->width > w->max_width || frame->height < 1 || frame->height > w->max_height) {
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "FRAME size %" PRIu32 "x%" PRIu32 " out of range 1x1..%" PRIu32 "x%" PRIu32,
                      frame->width, frame->height, w->max_width, w->max_height);
        return false;
    }
    if (frame->flags & ~(uint32_t)(LPC_FRAME_CURSOR | LPC_FRAME_FORMAT_CHANGED)) {
        lpc_fault_set(f, LPC_ERR_RESERVED, "FRAME.flags 0x%" PRIx32 " has bits other than CURSOR and FORMAT_CHANGED",
                      frame->flags);
        return false;
    }
    if (frame->plane_count != planes) {
        lpc_fault_set(f, LPC_ERR_GEOMETRY, "FRAME.plane_count %" PRIu32 " but format %" PRIu32 " has %" PRIu32,
                      frame->plane_count, frame->format, planes);
        return false;
    }
    for (uint32_t p = 0; p < 3; p++) {
        if (p >= planes) {
            if (frame->stride[p] != 0 || frame->plane_offset[p] != 0) {
                lpc_fault_set(f, LPC_ERR_GEOMETRY, "FRAME plane %" PRIu32 " is unused: stride and offset must be 0", p);
                return false;
            }
            continue;
        }
        if (frame->stride[p] < row_bytes[p] || (planes == 1 && frame->stride[p] % 4 != 0)) {
            lpc_fault_set(f, LPC_ERR_GEOMETRY, "FRAME.stride[%" PRIu32 "] %" PRIu32 " is below the row's %" PRIu64
                          " bytes (or not a multiple of 4)", p, frame->stride[p], row_bytes[p]);
            return false;
        }
        uint64_t end = (uint64_t)frame->plane_offset[p] + (uint64_t)frame->stride[p] * (rows[p] - 1) + row_bytes[p];
        if (end > w->slot_bytes) {
            lpc_fault_set(f, LPC_ERR_GEOMETRY, "FRAME plane %" PRIu32 " (offset %" PRIu32 ", stride %" PRIu32 ", %"
                          PRIu64 " rows) ends past the slot's %" PRIu64 " bytes", p, frame->plane_offset[p],
                          frame->stride[p], rows[p], w->slot_bytes);
            return false;
        }
    }
    return true;
}

size_t lpc_wire_encode(uint8_t *out, uint16_t type, const void *payload, size_t payload_bytes)
{
    lpc_header header = {
        .magic = LPC_MESSAGE_MAGIC, .type = type, .flags = 0, .payload_bytes = (uint32_t)payload_bytes, .reserved = 0,
    };
    memcpy(out, &header, sizeof header);
    if (payload_bytes > 0)
        memcpy(out + sizeof header, payload, payload_bytes);
    return sizeof header + payload_bytes;
}

size_t lpc_wire_encode_reason(uint8_t *out, uint16_t type, uint32_t code, const char *text)
{
    size_t len = text == NULL ? 0 : strlen(text);
    if (len > LPC_TEXT_MAX_BYTES) {
        len = LPC_TEXT_MAX_BYTES;
        while (len > 0 && ((uint8_t)text[len] & 0xC0) == 0x80)
            len--; /* never cut a UTF-8 character in two */
    }
    lpc_reason r = {.code = code, .text_bytes = (uint32_t)len};
    uint8_t *payload = out + sizeof(lpc_header);
    memcpy(payload, &r, sizeof r);
    if (len > 0)
        memcpy(payload + sizeof r, text, len);
    lpc_header header = {
        .magic = LPC_MESSAGE_MAGIC, .type = type, .flags = 0, .payload_bytes = (uint32_t)(sizeof r + len),
    };
    memcpy(out, &header, sizeof header);
    return sizeof header + sizeof r + len;
}

const char *lpc_error_name(uint32_t code)
{
    static const char *const names[] = {
        [LPC_ERR_BAD_MAGIC] = "BAD_MAGIC",       [LPC_ERR_BAD_LENGTH] = "BAD_LENGTH",
        [LPC_ERR_UNKNOWN_TYPE] = "UNKNOWN_TYPE", [LPC_ERR_VERSION] = "VERSION",
        [LPC_ERR_STATE] = "STATE",               [LPC_ERR_BAD_SLOT] = "BAD_SLOT",
        [LPC_ERR_SLOT_NOT_OWNED] = "SLOT_NOT_OWNED", [LPC_ERR_SEQUENCE] = "SEQUENCE",
        [LPC_ERR_GEOMETRY] = "GEOMETRY",         [LPC_ERR_FORMAT] = "FORMAT",
        [LPC_ERR_DESCRIPTORS] = "DESCRIPTORS",   [LPC_ERR_TRUNCATED] = "TRUNCATED",
        [LPC_ERR_PEER_UID] = "PEER_UID",         [LPC_ERR_BUSY] = "BUSY",
        [LPC_ERR_TIMEOUT] = "TIMEOUT",           [LPC_ERR_AUDIO] = "AUDIO",
        [LPC_ERR_TEXT] = "TEXT",                 [LPC_ERR_RESERVED] = "RESERVED",
    };
    if (code < sizeof names / sizeof names[0] && names[code] != NULL)
        return names[code];
    return "unknown code";
}

const char *lpc_status_name(int status)
{
    switch (status) {
    case LPC_OK: return "LPC_OK";
    case LPC_STOPPED: return "LPC_STOPPED";
    case LPC_E_NO_SLOT: return "LPC_E_NO_SLOT";
    case LPC_E_CONNECT: return "LPC_E_CONNECT";
    case LPC_E_REJECTED: return "LPC_E_REJECTED";
    case LPC_E_PUSHER_ERROR: return "LPC_E_PUSHER_ERROR";
    case LPC_E_CLOSED: return "LPC_E_CLOSED";
    case LPC_E_TIMEOUT: return "LPC_E_TIMEOUT";
    case LPC_E_PROTOCOL: return "LPC_E_PROTOCOL";
    case LPC_E_INVALID: return "LPC_E_INVALID";
    case LPC_E_STATE: return "LPC_E_STATE";
    case LPC_E_SYSTEM: return "LPC_E_SYSTEM";
    case LPC_FINISHED: return "LPC_FINISHED";
    default: return status > 0 ? "event bits" : "unknown status";
    }
}
