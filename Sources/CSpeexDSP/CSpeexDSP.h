// speexdsp's preprocessor (Debian libspeexdsp-dev): the microphone's noise suppression and
// automatic gain. Chosen over webrtc-audio-processing by tools/denoise-compare (docs/benchmarks.md).
#ifndef LIVEPUSH_CSPEEXDSP_H
#define LIVEPUSH_CSPEEXDSP_H
#include <speex/speex_preprocess.h>
#endif
