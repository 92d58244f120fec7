// libyuv: SIMD pixel-format conversion and scaling (Debian's libyuv-dev has no .pc file,
// so the module map links `yuv` by name). Its C API is used; the C++ parts stay hidden.
#ifndef LIVEPUSH_CYUV_H
#define LIVEPUSH_CYUV_H
#include <libyuv.h>
#endif
