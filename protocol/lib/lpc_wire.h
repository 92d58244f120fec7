/*
 * lpc_wire.h: liblivepush-capture's pure functions (no system calls): the checks of every
 * datagram a helper receives from the pusher (SPEC.md §4.4), the payload checks of WELCOME,
 * RELEASE, CONFIG and the reason messages, the ring header check (§6.4), frame layouts and
 * the FRAME bounds check (§8.4). Private to the library and its fuzzer (tools/fuzz/run).
 */
#ifndef LPC_WIRE_H
#define LPC_WIRE_H

#include "livepush_capture_helper.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "liblivepush-capture copies the wire structs as they are in memory: a little-endian host only"
#endif

#define LPC_WIRE_MAX_FDS 4 /* control space for this many descriptors (SPEC §4.3) */

/* A failed check: the lpc_error_code the rule carries (0 if none fits) and a text naming the
 * field and its value, as SPEC §5.14 asks of ERROR texts. */
typedef struct lpc_fault {
    uint32_t code;
    char text[LPC_TEXT_MAX_BYTES + 1];
} lpc_fault;

typedef struct lpc_message {
    uint16_t type;
    uint16_t flags;
    const uint8_t *payload;
    uint32_t payload_bytes;
} lpc_message;

enum lpc_parse_result {
    LPC_PARSE_OK = 0,       /* *m is a known message with a valid size and texts */
    LPC_PARSE_IGNORE = 1,   /* an unknown type with LPC_FLAG_OPTIONAL: ignore it */
    LPC_PARSE_FAULT = -1,   /* *f says which rule the pusher broke */
};

/* SPEC §4.4 checks 1-7 of one datagram received by the helper: msg_flags from recvmsg, the
 * number of descriptors that came with it. Types of the helper's own direction (HELLO...) are
 * a STATE fault here (check 8: never allowed on this side). */
int lpc_wire_parse(const uint8_t *datagram, size_t bytes, int msg_flags, int fd_count, lpc_message *m,
                   lpc_fault *f);

/* A parsed REJECT, ERROR or STOP: its code, and its text made printable (control characters,
 * i.e. bytes below 0x20 and 0x7F, replaced by '?') into text[cap]. */
void lpc_wire_reason(const lpc_message *m, uint32_t *code, char *text, size_t cap);

/* WELCOME's ranges against the HELLO that was sent (SPEC §5.9). */
bool lpc_wire_welcome(const lpc_message *m, const lpc_hello *hello, lpc_welcome *w, lpc_fault *f);

/* CONFIG's ranges against WELCOME (SPEC §5.12). */
bool lpc_wire_config(const lpc_message *m, const lpc_welcome *w, lpc_config *c, lpc_fault *f);

/* RELEASE against the slots the pusher holds: borrowed[i] and the sequence in each (§5.11). */
bool lpc_wire_release(const lpc_message *m, uint32_t slot_count, const bool *borrowed, const uint64_t *sequence,
                      lpc_release *r, lpc_fault *f);

/* The ring header at the start of a mapping of w->ring_bytes (SPEC §6.4 step 3). */
bool lpc_wire_ring_header(const void *ring, const lpc_welcome *w, lpc_fault *f);

/* A FRAME the helper is about to send, against the session (SPEC §5.3 steps 7-10, §8.4). */
bool lpc_wire_check_frame(const lpc_frame *frame, const lpc_welcome *w, lpc_fault *f);

/* UTF-8 without NUL (SPEC §2.3). */
bool lpc_wire_utf8(const uint8_t *s, size_t n);

/* Header + payload into out (>= LPC_MESSAGE_MAX_BYTES); returns the datagram's size. */
size_t lpc_wire_encode(uint8_t *out, uint16_t type, const void *payload, size_t payload_bytes);

/* Header + lpc_reason + text cut to LPC_TEXT_MAX_BYTES on a character boundary. */
size_t lpc_wire_encode_reason(uint8_t *out, uint16_t type, uint32_t code, const char *text);

void lpc_fault_set(lpc_fault *f, uint32_t code, const char *format, ...) __attribute__((format(printf, 3, 4)));

#endif /* LPC_WIRE_H */
