// libsrt as Debian ships it (1.5, the GnuTLS flavour that ffmpeg's libavformat links too):
// Secure Reliable Transport, caller mode, live transmission type. Only module SRT imports this.
// Headers only: the library is loaded on first use by CLazyLibraries (issue 22).
#ifndef LIVEPUSH_CSRT_H
#define LIVEPUSH_CSRT_H
#include <srt/srt.h>
#endif
