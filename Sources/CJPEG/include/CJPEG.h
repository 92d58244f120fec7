// CJPEG: Motion-JPEG frames (what webcams send) decoded by libjpeg-turbo straight into BGRx rows
// (issue 32, the camera source of livepush-capture). libjpeg reports errors by longjmp from its
// error_exit callback, which Swift cannot catch, so decoding is this C shim; libjpeg's types stay in
// shim.c and Swift sees an opaque decoder. libjpeg-turbo is already loaded by libyuv (it links it).
#ifndef LIVEPUSH_CJPEG_H
#define LIVEPUSH_CJPEG_H
#include <stddef.h>
#include <stdint.h>

/// A reusable decoder (one libjpeg decompress object, kept from frame to frame). Not thread-safe.
typedef struct CJPEG_decoder CJPEG_decoder;

/// A new decoder, or NULL when out of memory.
CJPEG_decoder *CJPEG_decoder_new(void);
void CJPEG_decoder_free(CJPEG_decoder *decoder);

/// Decodes the JPEG of `size` bytes at `jpeg` into BGRx (B, G, R, 255 per pixel; JPEG's full-range
/// BT.601 YCbCr converted by libjpeg-turbo) at `destination`, row after row `stride` bytes apart,
/// at most `max_width` x `max_height` pixels (a larger picture is cropped to its top-left corner).
/// The picture must be `width` x `height` (the size negotiated). Returns 0; -1 when the data is not
/// a JPEG of that size, or libjpeg failed (`CJPEG_decoder_error` says why); -2 when libjpeg warned
/// (corrupt or truncated data: the picture would show grey or garbage).
int CJPEG_decode_bgrx(CJPEG_decoder *decoder, const uint8_t *jpeg, size_t size, uint32_t width, uint32_t height,
                      uint8_t *destination, size_t stride, uint32_t max_width, uint32_t max_height);

/// The last error's text (empty when none).
const char *CJPEG_decoder_error(const CJPEG_decoder *decoder);

#endif
