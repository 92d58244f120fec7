// libpipewire-0.3 (audio capture in the pusher, screen capture in helpers).
//
// Much of PipeWire's API is made of function-like macros that dispatch through method
// tables (pw_core_add_listener, pw_core_sync, ...); Swift cannot import macros, so each
// one used from Swift gets a static inline wrapper here, named CPipeWire_<macro>.
#ifndef LIVEPUSH_CPIPEWIRE_H
#define LIVEPUSH_CPIPEWIRE_H
#include <pipewire/pipewire.h>
#include <spa/utils/hook.h>

static inline int CPipeWire_pw_core_add_listener(struct pw_core *core, struct spa_hook *listener,
                                                 const struct pw_core_events *events, void *data) {
    return pw_core_add_listener(core, listener, events, data);
}

/// Asks the daemon to answer `done(PW_ID_CORE, seq)` once it has handled every earlier request.
static inline int CPipeWire_pw_core_sync(struct pw_core *core, int seq) {
    return pw_core_sync(core, PW_ID_CORE, seq);
}

/// An empty property set (pw_properties_new is variadic, which Swift cannot call).
static inline struct pw_properties *CPipeWire_pw_properties_new_empty(void) {
    return pw_properties_new(NULL, NULL);
}

static inline uint32_t CPipeWire_PW_ID_CORE(void) { return PW_ID_CORE; }

// MARK: AudioCapture (PipeWireAudioCapture, AudioDevices): registry, metadata, capture streams.
#include <pipewire/extensions/metadata.h>
#include <spa/param/audio/format-utils.h>
#include <spa/pod/builder.h>
#include <spa/utils/dict.h>

static inline struct pw_registry *CPipeWire_pw_core_get_registry(struct pw_core *core) {
    return pw_core_get_registry(core, PW_VERSION_REGISTRY, 0);
}

static inline int CPipeWire_pw_registry_add_listener(struct pw_registry *registry, struct spa_hook *listener,
                                                     const struct pw_registry_events *events, void *data) {
    return pw_registry_add_listener(registry, listener, events, data);
}

/// Binds the metadata object `id` (the "default" metadata holds the default source and sink).
static inline struct pw_metadata *CPipeWire_pw_registry_bind_metadata(struct pw_registry *registry, uint32_t id) {
    return (struct pw_metadata *)pw_registry_bind(registry, id, PW_TYPE_INTERFACE_Metadata,
                                                  PW_VERSION_METADATA, 0);
}

static inline int CPipeWire_pw_metadata_add_listener(struct pw_metadata *metadata, struct spa_hook *listener,
                                                     const struct pw_metadata_events *events, void *data) {
    return pw_metadata_add_listener(metadata, listener, events, data);
}

/// The interface type names are string-pasting macros, which Swift does not import.
static inline const char *CPipeWire_PW_TYPE_INTERFACE_Node(void) { return PW_TYPE_INTERFACE_Node; }
static inline const char *CPipeWire_PW_TYPE_INTERFACE_Metadata(void) { return PW_TYPE_INTERFACE_Metadata; }
static inline uint32_t CPipeWire_PW_ID_ANY(void) { return PW_ID_ANY; }

static inline const char *CPipeWire_spa_dict_lookup(const struct spa_dict *dict, const char *key) {
    return dict ? spa_dict_lookup(dict, key) : NULL;
}

/// An EnumFormat pod for interleaved 32-bit float (native endianness: F32LE on every Linux
/// target we build for) with `channels` channels at `rate` Hz (0: the graph's rate), built into
/// `buffer`; NULL if it does not fit. The SPA pod builder is all macros and compound literals.
static inline const struct spa_pod *CPipeWire_build_f32_audio_format(uint8_t *buffer, uint32_t size,
                                                                     uint32_t rate, uint32_t channels) {
    struct spa_pod_builder builder = SPA_POD_BUILDER_INIT(buffer, size);
    struct spa_audio_info_raw info;
    memset(&info, 0, sizeof info);
    info.format = SPA_AUDIO_FORMAT_F32;
    info.rate = rate;
    info.channels = channels;
    return spa_format_audio_raw_build(&builder, SPA_PARAM_EnumFormat, &info);
}

/// Reads rate, channels and sample format from a negotiated Format param; 0 on success,
/// -1 if it is not raw audio.
static inline int CPipeWire_parse_audio_format(const struct spa_pod *param, uint32_t *rate, uint32_t *channels,
                                               uint32_t *format) {
    uint32_t media_type, media_subtype;
    struct spa_audio_info_raw info;
    if (param == NULL || spa_format_parse(param, &media_type, &media_subtype) < 0) return -1;
    if (media_type != SPA_MEDIA_TYPE_audio || media_subtype != SPA_MEDIA_SUBTYPE_raw) return -1;
    memset(&info, 0, sizeof info);
    if (spa_format_audio_raw_parse(param, &info) < 0) return -1;
    *rate = info.rate;
    *channels = info.channels;
    *format = info.format;
    return 0;
}

static inline uint32_t CPipeWire_SPA_AUDIO_FORMAT_F32(void) { return SPA_AUDIO_FORMAT_F32; }
static inline uint32_t CPipeWire_SPA_PARAM_Format(void) { return SPA_PARAM_Format; }

/// Connects a capture stream to whatever its target.object property names (or the default),
/// mapping buffers; process runs on the thread loop (no PW_STREAM_FLAG_RT_PROCESS).
static inline int CPipeWire_pw_stream_connect_capture(struct pw_stream *stream, const struct spa_pod *format) {
    const struct spa_pod *params[1] = { format };
    return pw_stream_connect(stream, SPA_DIRECTION_INPUT, PW_ID_ANY,
                             (enum pw_stream_flags)(PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS),
                             params, 1);
}
/// A one-shot timer on the loop (re-linking a capture stream the session manager dropped).
static inline struct spa_source *CPipeWire_pw_loop_add_timer(struct pw_loop *loop, spa_source_timer_func_t func,
                                                             void *data) {
    return pw_loop_add_timer(loop, func, data);
}

static inline int CPipeWire_pw_loop_arm_timer_ms(struct pw_loop *loop, struct spa_source *source, uint64_t ms) {
    struct timespec value = { (time_t)(ms / 1000), (long)((ms % 1000) * 1000000) };
    struct timespec interval = { 0, 0 };
    return pw_loop_update_timer(loop, source, &value, &interval, false);
}

static inline void CPipeWire_pw_loop_destroy_source(struct pw_loop *loop, struct spa_source *source) {
    pw_loop_destroy_source(loop, source);
}
// MARK: end of AudioCapture
#endif
