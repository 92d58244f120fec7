// swift-tools-version:6.0
//
// LivePush: a Linux screen + microphone broadcaster in two processes.
// The layout and the role of each target are described in docs/architecture.md.
import PackageDescription

/// How the release executables are linked (docs/architecture.md, "How the executables are linked").
/// `make build` and `make deb` add `--static-swift-stdlib` (the Swift runtime and Foundation linked
/// in); these settings add lld with packed relative relocations (DT_RELR: the static pusher's 1.8 MB
/// of relocations, read at every start, become 15 KB) and the functions a push runs placed together
/// in the order of `tools/link/NAME.order` (written by tools/orderfile), so that the pages of code a
/// push touches are few. Debug builds (the tests) are linked as SwiftPM does by default. What keeps the
/// installed package small (issue 36): the pusher links ICU's data for root and English only (CICUData), and
/// the helper's modules import FoundationEssentials, not Foundation, so that it links no ICU at all.
let packageDirectory = String(#filePath.dropLast("/Package.swift".count))
func releaseLinking(orderFile: String) -> [LinkerSetting] {
    [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                   "-Xlinker", "--symbol-ordering-file=\(packageDirectory)/tools/link/\(orderFile)",
                   "-Xlinker", "--no-warn-symbol-ordering"],
                  .when(configuration: .release))]
}

let package = Package(
    name: "LivePush",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "livepush", targets: ["livepush"]),
        .executable(name: "livepush-capture", targets: ["livepush-capture"]),
        .executable(name: "livepush-bench", targets: ["livepush-bench"]),
    ],
    targets: [
        // MARK: C libraries from Debian, found through pkg-config (libyuv ships no .pc file).

        .systemLibrary(
            name: "CXCB", pkgConfig: "xcb",
            providers: [.apt(["libxcb1-dev", "libxcb-shm0-dev", "libxcb-xfixes0-dev",
                              "libxcb-randr0-dev", "libxcb-damage0-dev"])]),
        // X RENDER (issue 16c: livepush-capture scales on the X server for LPC_CAP_SCALE).
        .systemLibrary(
            name: "CXCBRender", pkgConfig: "xcb-render",
            providers: [.apt(["libxcb-render0-dev"])]),
        // MIT-SCREEN-SAVER (issue 35: livepush-capture pauses while the X screen saver or a locker is on).
        .systemLibrary(
            name: "CXCBScreenSaver", pkgConfig: "xcb-screensaver",
            providers: [.apt(["libxcb-screensaver0-dev"])]),
        .systemLibrary(
            name: "CPipeWire", pkgConfig: "libpipewire-0.3",
            providers: [.apt(["libpipewire-0.3-dev"])]),
        .systemLibrary(
            name: "CFFmpeg", pkgConfig: "libavcodec",
            providers: [.apt(["libavcodec-dev", "libavformat-dev", "libavutil-dev",
                              "libswscale-dev", "libswresample-dev"])]),
        .systemLibrary(
            name: "CYUV",
            providers: [.apt(["libyuv-dev"])]),
        // PipeWire screen capture: the ScreenCast portal client speaks D-Bus through libdbus.
        .systemLibrary(
            name: "CDBus", pkgConfig: "dbus-1",
            providers: [.apt(["libdbus-1-dev"])]),

        // SRT output (issue 13): libsrt, the GnuTLS flavour (ffmpeg's libavformat links it already). Headers
        // only: the library is loaded on first use by CLazyLibraries (no pkgConfig, whose flags would link it).
        .systemLibrary(
            name: "CSRT",
            providers: [.apt(["libsrt-gnutls-dev"])]),
        // Sound: the microphone's noise suppression and automatic gain (issue 17).
        .systemLibrary(
            name: "CSpeexDSP", pkgConfig: "speexdsp",
            providers: [.apt(["libspeexdsp-dev"])]),

        // MARK: Linux calls that Swift's Glibc module does not expose.

        .target(
            name: "CLinuxShim",
            cSettings: [.define("_GNU_SOURCE")]),
        // Motion-JPEG frames of cameras decoded by libjpeg-turbo into BGRx (issue 32); libjpeg's types and its
        // longjmp error handling stay in the shim. libyuv already links libjpeg.so.62.
        .target(name: "CJPEG", linkerSettings: [.linkedLibrary("jpeg")]),
        // libavformat, libswscale, libsrt, OpenSSL and libmicrohttpd, loaded with dlopen when a feature first
        // calls them (issue 22): the functions LivePush calls, forwarded; no executable links those libraries.
        .target(name: "CLazyLibraries"),
        // ICU's data for the release pusher (issue 36): the root and English locales only (tools/icu/subset.py),
        // 4 MB in place of the toolchain's 34 MB; defined in release builds only (icu_data.c says why).
        .target(name: "CICUData", exclude: ["icudt76l-root-en.dat"],
                cSettings: [.define("LIVEPUSH_ICU_SUBSET", .when(configuration: .release))]),
        // RTMPS: a TLS client over a socket with OpenSSL's libssl (issue 13); OpenSSL's types stay in
        // its shim.c, Swift sees an opaque session. OpenSSL itself comes through CLazyLibraries.
        .target(name: "CTLS", dependencies: ["CLazyLibraries"]),

        // MARK: Swift modules, one job each.

        // What every process needs from Linux and nothing else: CLOCK_MONOTONIC (the one clock of the
        // protocol, the pusher and the helpers), CPU time, a failed system call in words, the version.
        .target(name: "LinuxSystem", dependencies: ["CLinuxShim"]),
        .target(name: "CommandLineSupport", dependencies: ["LinuxSystem"]),
        // Text safe to show: from strangers (helpers, servers) with its control characters escaped and its
        // length capped; stream keys, SRT secrets and passwords masked by one rule (Redaction).
        .target(name: "SafeText"),
        .target(name: "CaptureLink", dependencies: ["CLinuxShim", "SafeText", "LinuxSystem"]),
        .target(name: "FLV"),
        // What a receiver got, measured: FLV tags read back, pictures decoded by ffmpeg (tests, benchmarks).
        .target(name: "ReceivedMedia"),
        // Byte-stream transports under the RTMP client: TCP and TLS (issue 13).
        .target(name: "Transport", dependencies: ["CTLS"]),
        .target(name: "RTMP", dependencies: ["FLV", "Transport", "SafeText"]),
        .target(name: "Media", dependencies: ["CFFmpeg", "CYUV", "CLazyLibraries", "LinuxSystem"]),
        // SRT caller connections and their statistics (issue 13).
        .target(name: "SRT", dependencies: ["CSRT", "CLazyLibraries", "SafeText"]),
        .target(name: "ScreenCapture",
                dependencies: ["CXCB", "CXCBRender", "CXCBScreenSaver", "CYUV", "CLinuxShim", "LinuxSystem"]),
        // One PipeWire connection (loop, context, core, registry, errors) for every user (issue 17).
        .target(name: "PipeWireCore", dependencies: ["CPipeWire"]),
        .target(name: "AudioCapture", dependencies: ["CPipeWire", "PipeWireCore", "LinuxSystem"]),
        // Cameras on PipeWire (issue 32): the camera nodes, what each offers, the mode chosen.
        .target(name: "PipeWireCameras", dependencies: ["CPipeWire", "PipeWireCore", "CommandLineSupport"]),
        // PipeWire screen and camera capture: a video pw_stream, the ScreenCast and Camera portals (issues 9, 32).
        .target(name: "PipeWireScreen",
                dependencies: ["CPipeWire", "CDBus", "CYUV", "CJPEG", "PipeWireCore", "PipeWireCameras", "LinuxSystem"]),
        // Sound processing: noise suppression (speexdsp), voice activity (issue 17).
        .target(name: "AudioProcessing", dependencies: ["CSpeexDSP"]),
        // The preview window (issue 16): an X11 window fed with MIT-SHM put-image; xcb's types stay inside.
        .target(name: "PreviewWindow", dependencies: ["CXCB", "CLinuxShim"]),
        .target(name: "LivePush", dependencies: ["CaptureLink", "Media", "FLV", "RTMP", "SRT", "AudioCapture",
                                                 "AudioProcessing", "PreviewWindow", "SafeText", "LinuxSystem"]),

        // Steering and watching a broadcast: control socket, JSON events (issue 14).
        // CommandLineSupport: Suggestion, for an unknown command's "did you mean" (issue 35).
        .target(name: "Control", dependencies: ["LivePush", "Media", "CaptureLink", "CLinuxShim", "SafeText", "LinuxSystem",
                                               "CommandLineSupport"]),
        // libmicrohttpd (Debian's libmicrohttpd-dev): shims for its variadic start and its macros; the library
        // itself comes through CLazyLibraries.
        .target(name: "CMicroHTTPD", dependencies: ["CLazyLibraries"]),
        // The dashboard's HTTP server; libmicrohttpd's types stay inside.
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD"]),
        // The live dashboard (page and Chart.js served from disk) and the session report.
        .target(name: "Dashboard", dependencies: ["Control", "HTTPServer", "LivePush", "Media"],
                resources: [.copy("Resources")]),

        // MARK: Executables.

        .executableTarget(
            name: "livepush",
            dependencies: ["CommandLineSupport", "CaptureLink", "LivePush", "Media", "ScreenCapture",
                           "AudioCapture", "PipeWireCameras", "Control", "Dashboard", "CLinuxShim", "SafeText", "LinuxSystem",
                           "CICUData"],
            linkerSettings: releaseLinking(orderFile: "livepush.order")),
        .executableTarget(
            name: "livepush-capture",
            dependencies: ["CommandLineSupport", "CaptureLink", "ScreenCapture", "AudioCapture", "PipeWireScreen",
                           "PipeWireCameras", "LinuxSystem"],
            linkerSettings: releaseLinking(orderFile: "livepush-capture.order")),
        .executableTarget(
            name: "livepush-bench",
            dependencies: ["CaptureLink", "CommandLineSupport", "ScreenCapture", "AudioCapture", "Media",
                           "PipeWireCameras", "AudioProcessing", "LivePush", "Control", "ReceivedMedia", "LinuxSystem"]),

        // MARK: Tests. TestSupport finds the environment started by tools/testenv.

        .target(name: "TestSupport", dependencies: ["CaptureLink", "LinuxSystem", "ReceivedMedia"], path: "Tests/TestSupport"),
        .testTarget(name: "CLinuxShimTests", dependencies: ["CLinuxShim"]),
        .testTarget(name: "LinuxSystemTests", dependencies: ["LinuxSystem"]),
        .testTarget(name: "CommandLineSupportTests", dependencies: ["CommandLineSupport"]),
        .testTarget(name: "SafeTextTests", dependencies: ["SafeText"]),
        .testTarget(name: "FLVTests", dependencies: ["FLV", "Media", "TestSupport"]),
        .testTarget(name: "RTMPTests", dependencies: ["RTMP", "FLV", "Media", "ReceivedMedia", "TestSupport"]),
        .testTarget(name: "CaptureLinkTests", dependencies: ["CaptureLink", "CLinuxShim", "LinuxSystem", "TestSupport"]),
        .testTarget(name: "MediaTests", dependencies: ["Media", "TestSupport"]),
        .testTarget(name: "LivePushTests", dependencies: ["LivePush", "Media", "CaptureLink", "LinuxSystem", "TestSupport"]),
        .testTarget(name: "ReceivedMediaTests", dependencies: ["ReceivedMedia", "TestSupport"]),
        .testTarget(name: "DashboardTests", dependencies: ["Dashboard", "Control", "HTTPServer"]),
        .testTarget(name: "ControlTests",
                    dependencies: ["Control", "LivePush", "TestSupport"]),
        .testTarget(name: "ScreenCaptureTests", dependencies: ["ScreenCapture", "TestSupport"]),
        .testTarget(name: "AudioCaptureTests", dependencies: ["AudioCapture", "PipeWireCore", "LinuxSystem", "TestSupport"]),
        .testTarget(name: "PipeWireCamerasTests", dependencies: ["PipeWireCameras", "TestSupport"]),
        // What a user installs and types, without a broadcast: usage and its errors, man pages and
        // completions, `make install`, the release link, the test tooling, the module map.
        .testTarget(
            name: "InstallationTests",
            dependencies: ["TestSupport", "livepush", "livepush-capture", "livepush-bench"]),
        // Broadcasts as a user runs them, measured at the receivers (nginx-rtmp, recordings, PipeWire).
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["TestSupport", "CaptureLink", "FLV", "ReceivedMedia", "livepush", "livepush-capture",
                           "livepush-bench"]),
    ]
)
