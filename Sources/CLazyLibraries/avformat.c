// CLazyLibraries: the libavformat functions LivePush calls (recordings, SRT's MPEG-TS, music files,
// still images), loaded on first use; see include/CLazyLibraries.h.
#include "lazy.h"

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>

#define LAZY_LIBRARY CLazyLibraries_avformat_library
#define FAILED AVERROR(ENOSYS)

#define AVFORMAT_FUNCTIONS(X, V, F) \
    X(int, av_find_best_stream, (AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, \
        int related_stream, const AVCodec **decoder_ret, int flags), \
      (ic, type, wanted_stream_nb, related_stream, decoder_ret, flags), FAILED) \
    X(int, av_interleaved_write_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt), FAILED) \
    X(int, av_read_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt), FAILED) \
    X(int, av_write_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt), FAILED) \
    X(int, av_write_trailer, (AVFormatContext *s), (s), FAILED) \
    X(int, avformat_alloc_output_context2, (AVFormatContext **ctx, const AVOutputFormat *oformat, \
        const char *format_name, const char *filename), (ctx, oformat, format_name, filename), FAILED) \
    V(avformat_close_input, (AVFormatContext **s), (s)) \
    X(int, avformat_find_stream_info, (AVFormatContext *ic, AVDictionary **options), (ic, options), FAILED) \
    V(avformat_free_context, (AVFormatContext *s), (s)) \
    X(AVStream *, avformat_new_stream, (AVFormatContext *s, const AVCodec *c), (s, c), NULL) \
    X(int, avformat_open_input, (AVFormatContext **ps, const char *url, const AVInputFormat *fmt, \
        AVDictionary **options), (ps, url, fmt, options), FAILED) \
    X(int, avformat_seek_file, (AVFormatContext *s, int stream_index, int64_t min_ts, int64_t ts, \
        int64_t max_ts, int flags), (s, stream_index, min_ts, ts, max_ts, flags), FAILED) \
    X(unsigned, avformat_version, (void), (), 0) \
    X(int, avformat_write_header, (AVFormatContext *s, AVDictionary **options), (s, options), FAILED) \
    X(AVIOContext *, avio_alloc_context, (unsigned char *buffer, int buffer_size, int write_flag, void *opaque, \
        int (*read_packet)(void *opaque, uint8_t *buf, int buf_size), \
        int (*write_packet)(void *opaque, uint8_t *buf, int buf_size), \
        int64_t (*seek)(void *opaque, int64_t offset, int whence)), \
      (buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek), NULL) \
    X(int, avio_closep, (AVIOContext **s), (s), FAILED) \
    V(avio_context_free, (AVIOContext **s), (s)) \
    X(int, avio_open, (AVIOContext **s, const char *url, int flags), (s, url, flags), FAILED) \
    X(int64_t, avio_seek, (AVIOContext *s, int64_t offset, int whence), (s, offset, whence), FAILED)

LAZY_TABLE(AVFORMAT_FUNCTIONS)

LAZY_LIBRARY_DEFINE(CLazyLibraries_avformat, "libavformat59", NULL, 0, "libavformat.so.59")
