// livepush-bench: benchmarks that print figures (never pass/fail). `make bench` runs them.
import CommandLineSupport

let arguments = Array(CommandLine.arguments.dropFirst())
let usage = """
    Usage: livepush-bench link [--seconds N] [--runs N] [--sizes WxH,...] [--modes 60fps,max]
           livepush-bench capture [--seconds N] [--runs N] [--sizes WxH,...] [--fps N]
           livepush-bench record --painter PATH [--seconds N] [--runs N]
           livepush-bench soak --hostile PATH --painter PATH [--kills N] [--hangs N] [--garbage N] [--nginx-restarts N]
           livepush-bench audio [--seconds N] [--runs N] [--mic NAME]
           livepush-bench pipewire --producer PATH [--seconds N] [--runs N]
           livepush-bench camera --producer PATH [--seconds N] [--runs N]
           livepush-bench push --painter PATH [--seconds N] [--runs N] [--warmup N] [--publishers LIST] [--extra LIST]
           livepush-bench push --self-test --painter PATH [--display :N]
           livepush-bench load --painter PATH [--seconds N] [--runs N] [--publishers LIST]
           livepush-bench record-tracks [--seconds N] [--runs N]
           livepush-bench record-size --painter PATH [--size WxH] [--fps N] [--bitrate KBPS] [--seconds N] [--runs N]
           livepush-bench control [--count N] [--runs N]
           livepush-bench picture [--count N] [--runs N]
           livepush-bench resolution [--count N] [--runs N]
           livepush-bench alloc --painter PATH --shim PATH [--seconds N] [--warmup N] [--runs N]
           livepush-bench portal [--seconds N] [--runs N]   (as the desktop's user: $LIVEPUSH_TEST_WAYLAND_AS_USER)
           livepush-bench link-helper ...   (the helper process the link benchmark starts)

    link: a helper process sends BGRx frames through Capture Link to a consumer in this
    process that reads every cache line of every frame. One line per case, the median of --runs:
      link <W>x<H> mode=<60fps|max> fps=<n> handoff_p50_us=<n> handoff_p99_us=<n> drops=<n> helper_cpu_pct=<n> pusher_cpu_pct=<n>
    and the floor under it, a bare timestamp over a socket between two processes at 60 Hz:
      link-floor wake_p50_us=<n> wake_p99_us=<n>

    capture: livepush-capture on a private Xvfb of each size, next to a bare xcb_shm_get_image loop
    (the floor) and ffmpeg's x11grab at the same size and rate:
      capture x11 <W>x<H> fps_target=<n> fps=<n> grab_ms_p50=<n> grab_ms_p99=<n> helper_cpu_pct=<n>
      floor x11 <W>x<H> get_image_ms_p50=<n>
      ffmpeg x11grab <W>x<H> cpu_pct=<n>
      capture x11 scale <W>x<H>-><w>x<h> method=render|yuv|pusher frames=<w>x<h> fps=<n> helper_cpu_pct=<n>
        pusher_cpu_pct=<n> xserver_cpu_pct=<n>   (1920x1080 only: adaptive resolution's CONFIG to 1280x720)

    record: `livepush screen` (pusher and helper) recording a moving 1080p30 screen, and ffmpeg's
    x11grab + libx264 veryfast/zerolatency at 4500 kbps on the same screen:
      e2e record 1080p30 cpu_pct=<n> rss_mib=<n> fps=<n>
      ffmpeg record 1080p30 cpu_pct=<n> rss_mib=<n>
      ratio cpu=<ours/ffmpeg>

    record-tracks (inside tools/testenv run): `livepush screen` recording the test mic, the desktop
    audio and looping music at 640x360, the mix alone and with a track per source (--record-tracks):
      e2e record tracks=4 cpu_pct=<n> video=640x360
      e2e record tracks=1 cpu_pct=<n> video=640x360
      record tracks extra_cpu_pct=<n>

    replay: what a replay buffer costs (issue 34): `livepush screen` at 1080p30, 4500 kbps, for --seconds
    (default 30) + 8 s with `--replay-buffer SECONDS` and without; the pusher's RSS difference, the buffer's bytes:
      e2e replay 1080p30 seconds=<n> rss_mib=<n> buffer_mib=<n> pusher_rss_mib=<n> base_rss_mib=<n>

    soak (inside tools/testenv run): one `livepush screen` push through helper kills, hangs,
    protocol garbage and nginx restarts, then Ctrl-C (make soak):
      fault <kind> n=<count> survived=<count> max_gap_ms=<n> rss_growth_pct=<n> fd_growth=<n>
      shutdown exit_ms=<n> exit_code=<n> orphan_helpers=<n> stale_socket=<0|1>
      recording frames=<n> duration_s=<n> decoded=<yes|no>

    audio: PipeWireAudioCapture (48 kHz stereo F32, 20 ms chunks) from the test mic
    ($LIVEPUSH_TEST_MIC; run it inside tools/testenv), and pw-record on the same source:
      audio mic-capture cpu_pct=<n> chunks_per_s=<n>
      pw-record mic-capture cpu_pct=<n>
      audio mic->aac cpu_pct=<n>
      audio mic->aac+denoise cpu_pct=<n>     (speexdsp noise suppression before the encoder)
      audio bgm-decode mp3 cpu_pct=<n>       (background music: MP3 decoded, resampled to 48 kHz stereo)
      audio ear-monitor latency_ms=<n>       (mic to the default sink through a playback stream)

    pipewire: a 1920x1080 BGRx 30 fps PipeWire producer (tools/testclients/pw-video-source.c, run it
    under tools/testenv) consumed by livepush-capture --source pipewire, then by GStreamer's
    pipewiresrc ! videoconvert ! fakesink:
      capture pipewire 1920x1080 fps=<n> copy_ms_p50=<n> helper_cpu_pct=<n>
      gst pipewiresrc 1920x1080 cpu_pct=<n>

    camera: a 1280x720 30 fps camera offering YUY2 and MJPEG (tools/testclients/pw-camera-source.c, its
    send time stamped in its pixels; run it under tools/testenv), taken in each format by livepush-capture
    --source camera (converted or decoded into BGRx in the ring) and by GStreamer's pipewiresrc !
    [jpegdec !] videoconvert to BGRx (CPU with fakesink, latency through fdsink), alternated:
      capture camera format=<yuy2|mjpeg> 720p30 cpu_pct=<n> latency_ms_p50=<n> fps=<n>
      gst camera format=<yuy2|mjpeg> 720p30 cpu_pct=<n> latency_ms_p50=<n> fps=<n>
      camera ratios format=<yuy2|mjpeg> cpu_vs_gst=<x.xx> latency_p50_vs_gst=<x.xx>

    portal: livepush-capture --source portal on the real desktop of tools/testenv run --wayland (the
    compositor's output, 1280x720), then GStreamer's pipewiresrc ! videoconvert ! fakesink on the node
    that portal session granted:
      capture portal 1280x720 fps=<n> copy_ms_p50=<n> helper_cpu_pct=<n>
      gst pipewiresrc portal 1280x720 cpu_pct=<n>

    push: `livepush push`, ffmpeg's x11grab and GStreamer's ximagesrc pipelines each pushing the moving
    1080p30 screen (with a time code drawn by x11-paint) to the test nginx-rtmp; a receiver pulls the
    stream back and reads the code (run inside tools/testenv run --screen 1920x1080 -- ...):
      latency floor x11grab->decoder latency_ms_p50=<n>
      e2e push 1080p30 cpu_pct=<n> rss_mib=<n> fps=<n> latency_ms_p50=<n> latency_ms_p95=<n> pss_mib=<n> pusher_rss_mib=<n>
      ffmpeg push 1080p30 cpu_pct=<n> rss_mib=<n> fps=<n> latency_ms_p50=<n> latency_ms_p95=<n> pss_mib=<n>
      gstreamer push 1080p30 cpu_pct=<n> rss_mib=<n> fps=<n> latency_ms_p50=<n> latency_ms_p95=<n> pss_mib=<n>
      push ratios cpu_vs_ffmpeg=<x.xx> latency_p50_vs_gstreamer=<x.xx>
    then (--extra, PushScaleBenchmark.swift) the scrolling screen, x264 alone on the same pictures, a
    CRF recording beside the push, and 1080p60 and 1440p30 against ffmpeg:
      <e2e|ffmpeg|gstreamer> push 1080p30 content=scroll cpu_pct=<n> ... fresh_fps=<n> latency_ms_p95=<n>
      push ratios 1080p30 content=scroll cpu_vs_ffmpeg=<x.xx> cpu_vs_gstreamer=<x.xx> latency_p50_vs_gstreamer=<x.xx>
      floor x264 1080p30 content=<square|scroll> cpu_pct=<n> unpaced_cpu_pct=<n>
      push over floor 1080p30 content=<square|scroll> e2e_minus_floor_pct=<n>
      e2e push+record 1080p30 record=crf20 cpu_pct=<n> ...   push+record 1080p30 record=crf20 extra_cpu_pct=<n>
      <e2e|ffmpeg> push <1080p60|1440p30> cpu_pct=<n> rss_mib=<n> fps=<n> fresh_fps=<n> latency_ms_p50=<n> ...
      push ratios <1080p60|1440p30> cpu_vs_ffmpeg=<x.xx> latency_p50_vs_ffmpeg=<x.xx>
    --self-test checks the time code round trip (painter, x11grab, decoder) on the display.

    load: the push publishers under a CPU hog (2 busy loops) with Tests/Fixtures/av_stimulus.py's flash
    and 3 kHz burst, read at nginx (record app), the median of --runs; and livepush push stopped 800 ms:
      <e2e|ffmpeg|gstreamer> push 1080p30 load=cpu-hog fps=<n> av_sync_ms=<n> av_drift_ms_per_min=<n> skipped=<n> audio_gap_ms=<n>
      e2e push 1080p30 stall_ms=800 video_lost_ms=<n>

    record-size: `livepush screen` and ffmpeg recording a moving 3840x2160 screen (private Xvfb) at 30 fps:
      <e2e|ffmpeg> record 2160p30 cpu_pct=<n> rss_mib=<n> fps=<n> speed=<n>
      record ratios 2160p30 cpu=<x.xx>

    control: a LivePusher at 1080p30 with its control socket; `status` requests from a client, the
    dashboard's preview JPEG of a 1080p test picture, and one statistics event line:
      control status round_trip_us_p50=<n> round_trip_us_p99=<n>
      control preview 1920x1080 jpeg_ms_p50=<n> jpeg_bytes=<n>
      control events statistics_line_us=<n>

    picture: a 320x180 watermark with alpha blended into a 1080p I420 picture (libyuv's I420Blend
    over its rectangle only), and a PNG snapshot of that picture (libavcodec's png encoder):
      video watermark 1080p 320x180 blend_ms_p50=<n>
      video snapshot 1080p png_ms_p50=<n> png_bytes=<n>
    resolution: what one adaptive-resolution size change costs the video thread (a new libx264
    encoder, the pictures, the last picture scaled, the first keyframe at the new size):
      video resolution-switch <W>x<H>-><W>x<H> switch_ms_p50=<n> switch_ms_max=<n>
    alloc: heap allocations in steady state of `livepush push` at 1080p30 with the mic, counted by the
    alloc-count shim (tools/testclients/alloc-count.c, preloaded) over --seconds (run inside tools/testenv):
      alloc push 1080p30 allocs_per_s=<n> bytes_per_s=<n> frees_per_s=<n> fps=<n>
      alloc capture 1080p30 allocs_per_s=<n> bytes_per_s=<n>
    """

switch arguments.first {
case "link":
    LinkBenchmark.main(Array(arguments.dropFirst()))
case "record":
    RecordBenchmark.main(Array(arguments.dropFirst()))
case "record-tracks":  // RecordTracksBenchmark.swift (issue 34)
    RecordTracksBenchmark.main(Array(arguments.dropFirst()))
case "replay":  // ReplayBenchmark.swift (issue 34)
    ReplayBenchmark.main(Array(arguments.dropFirst()))
case "record-size":  // RecordScaleBenchmark.swift (issue 22: 4K)
    RecordScaleBenchmark.main(Array(arguments.dropFirst()))
case "push":  // push benchmark (issue 6)
    PushBenchmark.main(Array(arguments.dropFirst()))
case "load":  // LoadBenchmark.swift (issue 29)
    LoadBenchmark.main(Array(arguments.dropFirst()))
case "capture":
    CaptureBenchmark.main(Array(arguments.dropFirst()))
case "audio":  // AudioBenchmark.swift
    AudioBenchmark.main(Array(arguments.dropFirst()))
case "pipewire":
    PipeWireBenchmark.main(Array(arguments.dropFirst()))
case "camera":  // CameraBenchmark.swift (issue 32)
    CameraBenchmark.main(Array(arguments.dropFirst()))
case "portal":  // portal capture on a real desktop (issue 21)
    PortalBenchmark.main(Array(arguments.dropFirst()))
case "wake-floor-sender":
    WakeFloor.send(Array(arguments.dropFirst()))
case "soak":
    SoakBenchmark.main(Array(arguments.dropFirst()))
case "control":  // ControlBenchmark.swift (issue 14)
    ControlBenchmark.main(Array(arguments.dropFirst()))
case "picture":  // PictureBenchmark.swift (issue 16)
    PictureBenchmark.main(Array(arguments.dropFirst()))
case "resolution":  // ResolutionBenchmark.swift (issue 16b)
    ResolutionBenchmark.main(Array(arguments.dropFirst()))
case "alloc":  // AllocBenchmark.swift (issue 22)
    AllocBenchmark.main(Array(arguments.dropFirst()))
case "link-helper":
    LinkBenchmarkHelper.main(Array(arguments.dropFirst()))
case "-h", "--help":
    print(usage)
default:
    Terminal.printError("livepush-bench: name a benchmark\n\(usage)")
    Terminal.exit(.usage)
}
