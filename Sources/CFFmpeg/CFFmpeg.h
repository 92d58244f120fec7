// FFmpeg's libraries as Debian ships them (5.1 on Debian 12): encoders (libavcodec),
// containers (libavformat), scaling (libswscale) and resampling (libswresample). The module map links
// libavcodec, libavutil and libswresample only: libavformat and libswscale are loaded on first use by
// CLazyLibraries (issue 22), which defines the functions LivePush calls from them.
#ifndef LIVEPUSH_CFFMPEG_H
#define LIVEPUSH_CFFMPEG_H
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

// Function-like and computed macros, which Swift cannot import.
static inline int CFFmpeg_AVERROR(int posixErrno) { return AVERROR(posixErrno); }
static inline int CFFmpeg_AVERROR_EOF(void) { return AVERROR_EOF; }
static inline int64_t CFFmpeg_AV_NOPTS_VALUE(void) { return AV_NOPTS_VALUE; }
#endif
