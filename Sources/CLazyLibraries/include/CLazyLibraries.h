// CLazyLibraries: libavformat, libswscale, libsrt, OpenSSL and libmicrohttpd loaded on first use
// (issue 22 item 1). A plain RTMP push needs none of them, and loading them (with the ~40
// libraries only they bring) costs the pusher about 8 MiB of resident memory. So no LivePush
// executable links them: this target defines the functions LivePush calls, with the names and
// signatures of the libraries' own headers, and each one forwards through a pointer that is
// filled by dlopen/dlsym the first time any function of that library is called (as Implib.so
// does). The Swift code and the other shims call the functions as before.
//
// A library or symbol that cannot be loaded makes every function of that library return its
// failure value (NULL, a negative or zero result, as the header documents) and is reported by
// CLazyLibraries_check: callers check it first to give an error naming the library and the
// Debian package instead of a failing call further on.
#ifndef LIVEPUSH_CLAZYLIBRARIES_H
#define LIVEPUSH_CLAZYLIBRARIES_H

/// The libraries loaded on first use.
typedef enum CLazyLibraries_library {
    CLazyLibraries_avformat = 1,
    CLazyLibraries_swscale = 2,
    CLazyLibraries_srt = 3,
    CLazyLibraries_openssl = 4,
    CLazyLibraries_microhttpd = 5,
} CLazyLibraries_library;

/// Loads `library` (once; later calls return the first answer) and every symbol LivePush calls in
/// it. NULL when all are there; otherwise a message naming the file, the missing symbol or the
/// loader's reason, and the Debian package to install, valid for the life of the process.
const char *CLazyLibraries_check(CLazyLibraries_library library);

/// 1 when `library` has been loaded by this process (by a call or a check), else 0. No loading.
int CLazyLibraries_is_loaded(CLazyLibraries_library library);

/// What loading `symbol` from `file` says, with the same loader and wording as the libraries above (for
/// tests of the messages): NULL when it loads, else a message to free() naming the file or the symbol and
/// `package`. The file stays loaded when it could be.
char *CLazyLibraries_probe(const char *file, const char *package, const char *symbol);

/// The library's file name (`libavformat.so.59`), for messages.
const char *CLazyLibraries_file_name(CLazyLibraries_library library);
#endif
