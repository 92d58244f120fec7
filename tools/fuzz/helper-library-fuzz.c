/*
 * helper-library-fuzz.c: libFuzzer entry point for liblivepush-capture's parser, on the
 * pusher's side of the wire: every byte string a pusher could send goes through
 * lpc_wire_parse() and then through the payload check of its type (WELCOME against a HELLO,
 * CONFIG against a WELCOME, RELEASE against slots the pusher holds, the reason texts), and the
 * bytes are also read as a ring header and as a FRAME the helper would send. Anything but a
 * clean return (an out-of-bounds read, an overflow, undefined behaviour) is a bug: built with
 * AddressSanitizer and UndefinedBehaviorSanitizer by tools/fuzz/run.
 */
#include "lpc_wire.h"

#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The last byte picks the descriptors that "arrived" (0..3) and the recvmsg flags. */
    uint8_t extra = size > 0 ? data[size - 1] : 0;
    int fds = extra & 3, flags = (extra & 0x40) ? MSG_TRUNC : 0;
    static uint8_t datagram[LPC_MESSAGE_MAX_BYTES];
    size_t bytes = size > sizeof datagram ? sizeof datagram : size;
    memcpy(datagram, data, bytes); /* a receive buffer of the real size, as the library's */

    lpc_hello hello = {.version_major = 1, .capabilities = LPC_CAP_AUDIO | LPC_CAP_DAMAGE, .pixel_formats = 0x7E,
                       .audio_formats = 0x6, .max_width = 3840, .max_height = 2160};
    lpc_welcome welcome = {.version_major = 1, .session_id = 7, .ring_bytes = 4096 + 3 * 33177600, .slot_count = 3,
                           .pixel_formats = 0x7E, .slot_bytes = 33177600, .first_slot_offset = 4096,
                           .max_width = 3840, .max_height = 2160, .fps = 30, .heartbeat_interval_ms = 1000,
                           .peer_timeout_ms = 3000};
    lpc_message m;
    lpc_fault f;
    int parsed = lpc_wire_parse(datagram, bytes, flags, fds, &m, &f);
    if (parsed == LPC_PARSE_OK) {
        char text[64];
        uint32_t code;
        lpc_welcome w;
        lpc_config c;
        lpc_release r;
        bool borrowed[LPC_MAX_SLOTS] = {true, false, true, false};
        uint64_t sequence[LPC_MAX_SLOTS] = {5, 0, 6, 0};
        switch (m.type) {
        case LPC_WELCOME: (void)lpc_wire_welcome(&m, &hello, &w, &f); break;
        case LPC_CONFIG: (void)lpc_wire_config(&m, &welcome, &c, &f); break;
        case LPC_RELEASE: (void)lpc_wire_release(&m, welcome.slot_count, borrowed, sequence, &r, &f); break;
        case LPC_REJECT: case LPC_STOP: case LPC_ERROR: lpc_wire_reason(&m, &code, text, sizeof text); break;
        default: break;
        }
    }
    if (size >= sizeof(lpc_ring_header)) {
        static uint8_t ring[sizeof(lpc_ring_header)];
        memcpy(ring, data, sizeof ring);
        (void)lpc_wire_ring_header(ring, &welcome, &f);
    }
    if (size >= sizeof(lpc_frame)) {
        lpc_frame frame;
        memcpy(&frame, data, sizeof frame);
        (void)lpc_wire_check_frame(&frame, &welcome, &f);
        (void)lpc_frame_layout(&frame, frame.format, frame.width, frame.height, welcome.slot_bytes);
    }
    return 0;
}
