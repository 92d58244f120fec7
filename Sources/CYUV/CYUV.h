// libyuv: SIMD pixel-format conversion and scaling (Debian's libyuv-dev has no .pc file,
// so the module map links `yuv` by name). Its C API is used; the C++ parts stay hidden.
#ifndef LIVEPUSH_CYUV_H
#define LIVEPUSH_CYUV_H
#include <libyuv.h>

// The BT.709 limited-range constants by address: Swift would copy the (32-byte aligned)
// struct to pass a pointer to it, and libyuv's SIMD rows load it with aligned instructions.
static inline const struct YuvConstants *CYUV_BT709Constants(void) { return &kYuvH709Constants; }
#endif
