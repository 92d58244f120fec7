// CLazyLibraries: the libswscale functions LivePush calls (the conversions libyuv does not have),
// loaded on first use; see include/CLazyLibraries.h.
#include "lazy.h"

#include <libswscale/swscale.h>

#define LAZY_LIBRARY CLazyLibraries_swscale_library

#define SWSCALE_FUNCTIONS(X, V, F) \
    V(sws_freeContext, (struct SwsContext *swsContext), (swsContext)) \
    X(const int *, sws_getCoefficients, (int colorspace), (colorspace), NULL) \
    X(struct SwsContext *, sws_getContext, (int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH, \
        enum AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param), \
      (srcW, srcH, srcFormat, dstW, dstH, dstFormat, flags, srcFilter, dstFilter, param), NULL) \
    X(int, sws_scale, (struct SwsContext *c, const uint8_t *const srcSlice[], const int srcStride[], int srcSliceY, \
        int srcSliceH, uint8_t *const dst[], const int dstStride[]), \
      (c, srcSlice, srcStride, srcSliceY, srcSliceH, dst, dstStride), -1) \
    X(int, sws_setColorspaceDetails, (struct SwsContext *c, const int inv_table[4], int srcRange, \
        const int table[4], int dstRange, int brightness, int contrast, int saturation), \
      (c, inv_table, srcRange, table, dstRange, brightness, contrast, saturation), -1) \
    X(unsigned, swscale_version, (void), (), 0)

LAZY_TABLE(SWSCALE_FUNCTIONS)

LAZY_LIBRARY_DEFINE(CLazyLibraries_swscale, "libswscale6", NULL, 0, "libswscale.so.6")
