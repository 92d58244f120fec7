// Measures the two Debian noise suppressors on the issue-17 test signal: white noise at
// -40 dBFS plus a 1000 Hz tone at -18 dBFS, 48 kHz mono, 10 s; the tone either steady or in
// bursts (500 ms on, 500 ms off, like syllables: what a suppressor is for). Prints, per library
// and level, the tone's change (inside the bursts) and the noise's change (everything but the
// tone) over the last 5 s, in dB, and the CPU time per second of audio.
// Build and run: tools/denoise-compare/run
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>
#include <speex/speex_preprocess.h>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

static const int kRate = 48000, kSeconds = 10;

static bool bursts = false;
static bool toneOn(size_t i) { return !bursts || (i % kRate) < (size_t)kRate / 2; }

static std::vector<short> makeSignal() {
    std::vector<short> s(kRate * kSeconds);
    unsigned seed = 17;
    double tone = std::pow(10.0, -18.0 / 20) * std::sqrt(2.0), noise = std::pow(10.0, -40.0 / 20) * std::sqrt(3.0);
    for (size_t i = 0; i < s.size(); i++) {
        seed = seed * 1103515245u + 12345u;
        double white = ((seed >> 8) & 0xffff) / 32768.0 - 1.0;
        double v = (toneOn(i) ? tone : 0) * std::sin(2 * M_PI * 1000.0 * i / kRate) + noise * white;
        s[i] = (short)std::lround(v * 32767);
    }
    return s;
}

// Tone level (Goertzel, dBFS as rms) and the level of the rest, over the last 5 s.
static void measure(const std::vector<short> &s, double &toneDb, double &restDb) {
    size_t from = s.size() - kRate * 5;
    double c = 2 * std::cos(2 * M_PI * 1000.0 / kRate), p = 0, pp = 0, total = 0;
    size_t n = 0;
    for (size_t i = from; i < s.size(); i++) {
        // In bursts: inside each burst, away from its edges (50 ms).
        if (bursts && !((i % kRate) >= (size_t)kRate / 20 && (i % kRate) < (size_t)kRate * 9 / 20)) continue;
        double x = s[i] / 32768.0, cur = x + c * p - pp;
        pp = p; p = cur; total += x * x; n++;
    }
    double power = p * p + pp * pp - c * p * pp, amplitude = 2 * std::sqrt(power) / n;
    double toneMs = amplitude * amplitude / 2, totalMs = total / n;
    toneDb = 10 * std::log10(toneMs);
    restDb = 10 * std::log10(std::max(totalMs - toneMs, 1e-12));
}

static double cpuSeconds() { return (double)clock() / CLOCKS_PER_SEC; }

static void report(const char *name, const std::vector<short> &in, const std::vector<short> &out, double cpu) {
    double t0, r0, t1, r1;
    measure(in, t0, r0);
    measure(out, t1, r1);
    printf("denoise %-7s %-22s tone_change_db=%+.1f noise_change_db=%+.1f cpu_ms_per_s=%.2f\n", bursts ? "bursts" : "steady", name, t1 - t0, r1 - r0,
           cpu * 1000 / kSeconds);
}

int main() {
  for (int b = 0; b < 2; b++) {
    bursts = b == 1;
    std::vector<short> in = makeSignal();
    for (int suppressDb : {-15, -25, -40}) {
        std::vector<short> out = in;
        SpeexPreprocessState *st = speex_preprocess_state_init(960, kRate);
        int on = 1;
        speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_DENOISE, &on);
        speex_preprocess_ctl(st, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &suppressDb);
        double start = cpuSeconds();
        for (size_t i = 0; i + 960 <= out.size(); i += 960) speex_preprocess_run(st, &out[i]);
        double cpu = cpuSeconds() - start;
        speex_preprocess_state_destroy(st);
        char name[64];
        snprintf(name, sizeof name, "speexdsp(%ddB)", suppressDb);
        report(name, in, out, cpu);
    }
    const webrtc::NoiseSuppression::Level levels[] = {webrtc::NoiseSuppression::kLow, webrtc::NoiseSuppression::kModerate,
                                                      webrtc::NoiseSuppression::kHigh, webrtc::NoiseSuppression::kVeryHigh};
    const char *names[] = {"low", "moderate", "high", "veryhigh"};
    for (int l = 0; l < 4; l++) {
        std::vector<short> out = in;
        webrtc::AudioProcessing *apm = webrtc::AudioProcessing::Create();
        apm->noise_suppression()->set_level(levels[l]);
        apm->noise_suppression()->Enable(true);
        apm->high_pass_filter()->Enable(false);
        webrtc::AudioFrame frame;
        frame.sample_rate_hz_ = kRate;
        frame.num_channels_ = 1;
        frame.samples_per_channel_ = 480;
        double start = cpuSeconds();
        for (size_t i = 0; i + 480 <= out.size(); i += 480) {
            for (int k = 0; k < 480; k++) frame.data_[k] = out[i + k];
            if (apm->ProcessStream(&frame) != 0) { fprintf(stderr, "webrtc ProcessStream failed\n"); return 1; }
            for (int k = 0; k < 480; k++) out[i + k] = frame.data_[k];
        }
        double cpu = cpuSeconds() - start;
        delete apm;
        char name[64];
        snprintf(name, sizeof name, "webrtc-ap(%s)", names[l]);
        report(name, in, out, cpu);
    }
  }
    return 0;
}
