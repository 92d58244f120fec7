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
// MARK: video (PipeWireScreen)
//
// Screen capture from a PipeWire video node (module PipeWireScreen). The SPA pod builder is a
// set of variadic macros, so the pods the video stream needs are built here; the macros of the
// registry and node proxies get wrappers like the core's above.
#include <spa/param/video/format-utils.h>
#include <spa/param/video/type-info.h>
#include <spa/param/buffers.h>
#include <spa/param/param.h>
#include <spa/buffer/meta.h>
#include <spa/pod/builder.h>
#include <spa/debug/types.h>

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
/// mapping buffers; process runs on the context's real-time data loop (PW_STREAM_FLAG_RT_PROCESS),
/// where it must only copy the samples out (AudioCapture's SampleHandoff).
static inline int CPipeWire_pw_stream_connect_capture(struct pw_stream *stream, const struct spa_pod *format) {
    const struct spa_pod *params[1] = { format };
    return pw_stream_connect(stream, SPA_DIRECTION_INPUT, PW_ID_ANY,
                             (enum pw_stream_flags)(PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS
                                                    | PW_STREAM_FLAG_RT_PROCESS),
                             params, 1);
}

/// An event source on the loop: `func` runs on the loop's thread after any thread signals it
/// (an eventfd write: safe from a real-time thread).
static inline struct spa_source *CPipeWire_pw_loop_add_event(struct pw_loop *loop, spa_source_event_func_t func,
                                                             void *data) {
    return pw_loop_add_event(loop, func, data);
}

static inline int CPipeWire_pw_loop_signal_event(struct pw_loop *loop, struct spa_source *source) {
    return pw_loop_signal_event(loop, source);
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

// MARK: video (PipeWireScreen), continued: node proxies, video pods (the registry wrappers above serve both).
static inline struct pw_node *CPipeWire_pw_registry_bind_node(struct pw_registry *registry, uint32_t id) {
    return (struct pw_node *)pw_registry_bind(registry, id, PW_TYPE_INTERFACE_Node, PW_VERSION_NODE, 0);
}

static inline int CPipeWire_pw_node_add_listener(struct pw_node *node, struct spa_hook *listener,
                                                 const struct pw_node_events *events, void *data) {
    return pw_node_add_listener(node, listener, events, data);
}

/// Asks the node for its EnumFormat params; they arrive as `param` events.
static inline int CPipeWire_pw_node_enum_formats(struct pw_node *node, int seq) {
    return pw_node_enum_params(node, seq, SPA_PARAM_EnumFormat, 0, UINT32_MAX, NULL);
}

/// Builds the EnumFormat pod a video consumer offers: raw video in one of `formats` (SPA video
/// format ids, the first preferred), any size from 1x1 to max_width x max_height, any frame rate.
/// Returns NULL when `buffer` is too small.
static inline const struct spa_pod *CPipeWire_video_build_enum_format(
    uint8_t *buffer, uint32_t buffer_size, const uint32_t *formats, uint32_t format_count,
    uint32_t default_width, uint32_t default_height, uint32_t max_width, uint32_t max_height) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, buffer_size);
    struct spa_pod_frame f[2];
    struct spa_rectangle def_size = SPA_RECTANGLE(default_width, default_height);
    struct spa_rectangle min_size = SPA_RECTANGLE(1, 1);
    struct spa_rectangle max_size = SPA_RECTANGLE(max_width, max_height);
    struct spa_fraction def_rate = SPA_FRACTION(30, 1);
    struct spa_fraction min_rate = SPA_FRACTION(0, 1);
    struct spa_fraction max_rate = SPA_FRACTION(1000, 1);
    spa_pod_builder_push_object(&b, &f[0], SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(&b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video), 0);
    spa_pod_builder_add(&b, SPA_FORMAT_mediaSubtype, SPA_POD_Id(SPA_MEDIA_SUBTYPE_raw), 0);
    spa_pod_builder_prop(&b, SPA_FORMAT_VIDEO_format, 0);
    spa_pod_builder_push_choice(&b, &f[1], SPA_CHOICE_Enum, 0);
    spa_pod_builder_id(&b, formats[0]);  // the default
    for (uint32_t i = 0; i < format_count; i++) spa_pod_builder_id(&b, formats[i]);
    spa_pod_builder_pop(&b, &f[1]);
    spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_size, SPA_POD_CHOICE_RANGE_Rectangle(&def_size, &min_size, &max_size), 0);
    spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_framerate,
                        SPA_POD_CHOICE_RANGE_Fraction(&def_rate, &min_rate, &max_rate), 0);
    const struct spa_pod *pod = (const struct spa_pod *)spa_pod_builder_pop(&b, &f[0]);
    return b.state.offset > buffer_size ? NULL : pod;
}

/// The Buffers param: mappable memory only (MemPtr or MemFd; no DMA-BUF), 2 to 16 buffers.
static inline const struct spa_pod *CPipeWire_video_build_buffers(uint8_t *buffer, uint32_t buffer_size) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, buffer_size);
    const struct spa_pod *pod = (const struct spa_pod *)spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamBuffers, SPA_PARAM_Buffers,
        SPA_PARAM_BUFFERS_buffers, SPA_POD_CHOICE_RANGE_Int(4, 2, 16),
        SPA_PARAM_BUFFERS_dataType, SPA_POD_CHOICE_FLAGS_Int((1 << SPA_DATA_MemPtr) | (1 << SPA_DATA_MemFd)));
    return b.state.offset > buffer_size ? NULL : pod;
}

/// A Meta param asking for `type` with a fixed size.
static inline const struct spa_pod *CPipeWire_video_build_meta(uint8_t *buffer, uint32_t buffer_size, uint32_t type,
                                                               uint32_t size) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, buffer_size);
    const struct spa_pod *pod = (const struct spa_pod *)spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(type),
        SPA_PARAM_META_size, SPA_POD_Int(size));
    return b.state.offset > buffer_size ? NULL : pod;
}

/// A Meta param asking for `type` with a size between `min_size` and `max_size`.
static inline const struct spa_pod *CPipeWire_video_build_meta_range(uint8_t *buffer, uint32_t buffer_size,
                                                                     uint32_t type, uint32_t default_size,
                                                                     uint32_t min_size, uint32_t max_size) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, buffer_size);
    const struct spa_pod *pod = (const struct spa_pod *)spa_pod_builder_add_object(&b,
        SPA_TYPE_OBJECT_ParamMeta, SPA_PARAM_Meta,
        SPA_PARAM_META_type, SPA_POD_Id(type),
        SPA_PARAM_META_size, SPA_POD_CHOICE_RANGE_Int(default_size, min_size, max_size));
    return b.state.offset > buffer_size ? NULL : pod;
}

/// Bytes of a cursor meta with room for a `width` x `height` 32-bit bitmap.
static inline uint32_t CPipeWire_video_cursor_meta_size(uint32_t width, uint32_t height) {
    return (uint32_t)(sizeof(struct spa_meta_cursor) + sizeof(struct spa_meta_bitmap) + width * height * 4);
}

/// Parses a Format param into raw video info; returns 0, or -1 when it is not raw video.
static inline int CPipeWire_video_parse_format(const struct spa_pod *param, struct spa_video_info_raw *info) {
    uint32_t media_type = 0, media_subtype = 0;
    if (param == NULL || spa_format_parse(param, &media_type, &media_subtype) < 0) return -1;
    if (media_type != SPA_MEDIA_TYPE_video || media_subtype != SPA_MEDIA_SUBTYPE_raw) return -1;
    spa_zero(*info);
    return spa_format_video_raw_parse(param, info) < 0 ? -1 : 0;
}

/// The video formats an EnumFormat param offers (a single value or every value of a choice),
/// up to `max_count`; also says whether the param is raw video (1) or another subtype (0).
static inline int CPipeWire_video_offered_formats(const struct spa_pod *param, uint32_t *out, int max_count,
                                                  uint32_t *media_subtype) {
    uint32_t media_type = 0;
    *media_subtype = 0;
    if (param == NULL || spa_format_parse(param, &media_type, media_subtype) < 0) return 0;
    if (media_type != SPA_MEDIA_TYPE_video || !spa_pod_is_object(param)) return 0;
    const struct spa_pod_prop *prop = spa_pod_find_prop(param, NULL, SPA_FORMAT_VIDEO_format);
    if (prop == NULL) return 0;
    uint32_t n_values = 0, choice = 0;
    const struct spa_pod *values = spa_pod_get_values(&prop->value, &n_values, &choice);
    if (values == NULL || values->type != SPA_TYPE_Id) return 0;
    const uint32_t *ids = (const uint32_t *)SPA_POD_BODY_CONST(values);
    int count = 0;
    // For an Enum choice the first value is the default and repeats one of the others.
    uint32_t first = (choice == SPA_CHOICE_Enum && n_values > 1) ? 1 : 0;
    for (uint32_t i = first; i < n_values && count < max_count; i++) out[count++] = ids[i];
    return count;
}

/// The short name of an SPA video format ("BGRx", "NV12", "YUY2"), or NULL.
static inline const char *CPipeWire_video_format_name(uint32_t format) {
    return spa_debug_type_find_short_name(spa_type_video_format, format);
}

static inline struct spa_meta_bitmap *CPipeWire_video_cursor_bitmap(struct spa_meta_cursor *cursor) {
    if (cursor->bitmap_offset < sizeof(struct spa_meta_cursor)) return NULL;
    return SPA_PTROFF(cursor, cursor->bitmap_offset, struct spa_meta_bitmap);
}

// MARK: cameras (PipeWireCameras: what a camera node offers; PipeWireScreen's camera stream)
//
// A camera node (what WirePlumber makes of a V4L2 or libcamera device: media.class Video/Source,
// media.role Camera) describes each of its modes in an EnumFormat param: raw video in one format, or
// MJPEG, at one size (or a range of sizes), with a list (or a range) of frame rates. The SPA pod API is
// macros and variable-length choices, so a param is flattened here into plain arrays for Swift.

/// The values of one property of an object pod (a single value, or every value of a choice) whose
/// values have `size` bytes each, copied into `out` (at most `max_count`); `choice` gets the choice type
/// (SPA_CHOICE_None for a single value). Returns the number copied, or -1 when the property is missing
/// or of another pod type.
static inline int CPipeWire_pod_prop_values(const struct spa_pod *object, uint32_t key, uint32_t type, uint32_t size,
                                            void *out, uint32_t max_count, uint32_t *choice) {
    const struct spa_pod_prop *prop = spa_pod_find_prop(object, NULL, key);
    if (prop == NULL) return -1;
    uint32_t n_values = 0;
    const struct spa_pod *values = spa_pod_get_values(&prop->value, &n_values, choice);
    if (values == NULL || values->type != type || values->size != size) return -1;
    uint32_t count = n_values < max_count ? n_values : max_count;
    memcpy(out, SPA_POD_BODY_CONST(values), (size_t)count * size);
    return (int)count;
}

/// One EnumFormat param of a video node, flattened: the media subtype (SPA_MEDIA_SUBTYPE_raw, _mjpg, ...),
/// the raw formats (none for MJPEG), the sizes and frame rates with their choice types (None: one
/// value; Enum: a default, then the values; Range: default, min, max; Step: default, min, max, step),
/// and the colour matrix (SPA_VIDEO_COLOR_MATRIX_*, 0 when the node does not say). Returns 0, or -1
/// when the param is not video or has no size.
static inline int CPipeWire_video_parse_offer(const struct spa_pod *param, uint32_t *media_subtype,
                                              uint32_t *formats, uint32_t max_formats, int *format_count,
                                              uint32_t *format_choice,
                                              struct spa_rectangle *sizes, uint32_t max_sizes, int *size_count,
                                              uint32_t *size_choice,
                                              struct spa_fraction *rates, uint32_t max_rates, int *rate_count,
                                              uint32_t *rate_choice, uint32_t *color_matrix) {
    uint32_t media_type = 0;
    *media_subtype = 0;
    *color_matrix = 0;
    if (param == NULL || !spa_pod_is_object(param)) return -1;
    if (spa_format_parse(param, &media_type, media_subtype) < 0 || media_type != SPA_MEDIA_TYPE_video) return -1;
    *format_count = CPipeWire_pod_prop_values(param, SPA_FORMAT_VIDEO_format, SPA_TYPE_Id, sizeof(uint32_t),
                                              formats, max_formats, format_choice);
    *size_count = CPipeWire_pod_prop_values(param, SPA_FORMAT_VIDEO_size, SPA_TYPE_Rectangle,
                                            sizeof(struct spa_rectangle), sizes, max_sizes, size_choice);
    *rate_count = CPipeWire_pod_prop_values(param, SPA_FORMAT_VIDEO_framerate, SPA_TYPE_Fraction,
                                            sizeof(struct spa_fraction), rates, max_rates, rate_choice);
    uint32_t matrix_choice = 0;
    if (CPipeWire_pod_prop_values(param, SPA_FORMAT_VIDEO_colorMatrix, SPA_TYPE_Id, sizeof(uint32_t),
                                  color_matrix, 1, &matrix_choice) < 1) {
        *color_matrix = 0;
    }
    return *size_count > 0 ? 0 : -1;
}

/// The EnumFormat pod a camera consumer offers for one chosen mode: raw video in `format` (or MJPEG
/// when `media_subtype` is SPA_MEDIA_SUBTYPE_mjpg), exactly `width` x `height` at `rate_num`/`rate_denom`
/// frames per second. NULL when `buffer` is too small.
static inline const struct spa_pod *CPipeWire_video_build_camera_format(
    uint8_t *buffer, uint32_t buffer_size, uint32_t media_subtype, uint32_t format, uint32_t width, uint32_t height,
    uint32_t rate_num, uint32_t rate_denom) {
    struct spa_pod_builder b = SPA_POD_BUILDER_INIT(buffer, buffer_size);
    struct spa_pod_frame f;
    spa_pod_builder_push_object(&b, &f, SPA_TYPE_OBJECT_Format, SPA_PARAM_EnumFormat);
    spa_pod_builder_add(&b, SPA_FORMAT_mediaType, SPA_POD_Id(SPA_MEDIA_TYPE_video),
                        SPA_FORMAT_mediaSubtype, SPA_POD_Id(media_subtype), 0);
    if (media_subtype == SPA_MEDIA_SUBTYPE_raw) spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_format, SPA_POD_Id(format), 0);
    spa_pod_builder_add(&b, SPA_FORMAT_VIDEO_size, SPA_POD_Rectangle(&SPA_RECTANGLE(width, height)),
                        SPA_FORMAT_VIDEO_framerate, SPA_POD_Fraction(&SPA_FRACTION(rate_num, rate_denom)), 0);
    const struct spa_pod *pod = (const struct spa_pod *)spa_pod_builder_pop(&b, &f);
    return b.state.offset > buffer_size ? NULL : pod;
}

/// Parses a negotiated Format param of a camera stream: the subtype (raw or mjpg), the raw format (0
/// for MJPEG), the size, the frame rate and the colour matrix (0 when not said). Returns 0, or -1 when
/// it is neither raw video nor MJPEG.
static inline int CPipeWire_video_parse_camera_format(const struct spa_pod *param, uint32_t *media_subtype,
                                                      uint32_t *format, uint32_t *width, uint32_t *height,
                                                      uint32_t *rate_num, uint32_t *rate_denom,
                                                      uint32_t *color_matrix) {
    uint32_t media_type = 0;
    if (param == NULL || spa_format_parse(param, &media_type, media_subtype) < 0) return -1;
    if (media_type != SPA_MEDIA_TYPE_video) return -1;
    if (*media_subtype == SPA_MEDIA_SUBTYPE_raw) {
        struct spa_video_info_raw info;
        spa_zero(info);
        if (spa_format_video_raw_parse(param, &info) < 0) return -1;
        *format = info.format;
        *width = info.size.width;
        *height = info.size.height;
        *rate_num = info.framerate.num;
        *rate_denom = info.framerate.denom;
        *color_matrix = info.color_matrix;
        return 0;
    }
    if (*media_subtype == SPA_MEDIA_SUBTYPE_mjpg) {
        struct spa_video_info_mjpg info;
        spa_zero(info);
        if (spa_format_video_mjpg_parse(param, &info) < 0) return -1;
        *format = 0;
        *width = info.size.width;
        *height = info.size.height;
        *rate_num = info.framerate.num;
        *rate_denom = info.framerate.denom;
        *color_matrix = 0;
        return 0;
    }
    return -1;
}

/// The short name of a media subtype ("raw", "mjpg", "h264"), or NULL.
static inline const char *CPipeWire_media_subtype_name(uint32_t subtype) {
    return spa_debug_type_find_short_name(spa_type_media_subtype, subtype);
}

// MARK: ear monitoring (AudioCapture's PipeWirePlayback)

/// Connects a playback stream to whatever its target.object property names (or the default
/// sink), mapping buffers; process runs on the thread loop.
static inline int CPipeWire_pw_stream_connect_playback(struct pw_stream *stream, const struct spa_pod *format) {
    const struct spa_pod *params[1] = { format };
    return pw_stream_connect(stream, SPA_DIRECTION_OUTPUT, PW_ID_ANY,
                             (enum pw_stream_flags)(PW_STREAM_FLAG_AUTOCONNECT | PW_STREAM_FLAG_MAP_BUFFERS),
                             params, 1);
}

#endif
