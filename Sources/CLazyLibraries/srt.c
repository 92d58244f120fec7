// CLazyLibraries: the libsrt functions the SRT module calls, loaded on first use; see
// include/CLazyLibraries.h. A failed load's text is what srt_getlasterror_str returns.
#include "lazy.h"

#include <srt/srt.h>

#define LAZY_LIBRARY CLazyLibraries_srt_library

#define SRT_FUNCTIONS(X, V, F) \
    X(int, srt_bstats, (SRTSOCKET u, SRT_TRACEBSTATS *perf, int clear), (u, perf, clear), SRT_ERROR) \
    X(int, srt_close, (SRTSOCKET u), (u), SRT_ERROR) \
    X(int, srt_connect, (SRTSOCKET u, const struct sockaddr *name, int namelen), (u, name, namelen), SRT_ERROR) \
    X(SRTSOCKET, srt_create_socket, (void), (), SRT_INVALID_SOCK) \
    X(int, srt_getlasterror, (int *errno_loc), (errno_loc), SRT_ERROR) \
    X(const char *, srt_getlasterror_str, (void), (), lazy_error(&LAZY_LIBRARY)) \
    X(int, srt_getrejectreason, (SRTSOCKET sock), (sock), 0) \
    X(const char *, srt_rejectreason_str, (int id), (id), lazy_error(&LAZY_LIBRARY)) \
    X(int, srt_sendmsg2, (SRTSOCKET u, const char *buf, int len, SRT_MSGCTRL *mctrl), (u, buf, len, mctrl), SRT_ERROR) \
    F(srt_setloglevel, (int ll), (ll), (void)0) \
    X(int, srt_setsockflag, (SRTSOCKET u, SRT_SOCKOPT opt, const void *optval, int optlen), (u, opt, optval, optlen), \
      SRT_ERROR) \
    X(int, srt_startup, (void), (), SRT_ERROR)

LAZY_TABLE(SRT_FUNCTIONS)

LAZY_LIBRARY_DEFINE(CLazyLibraries_srt, "libsrt1.5-gnutls", NULL, 0, "libsrt-gnutls.so.1.5")
