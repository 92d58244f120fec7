import CLazyLibraries

/// The libraries LivePush loads only when a feature first needs them (CLazyLibraries, issue 22): a plain
/// RTMP push never maps them. `livepush doctor` lists them with what each is for.
public enum OptionalLibraries {
    public struct Status: Sendable {
        /// The library's file, `libavformat.so.59`.
        public let file: String
        /// What needs it, for a person ("recordings, SRT, music and picture files").
        public let neededFor: String
        /// Nil when it loads with every function LivePush calls; else the loader's words (file or function
        /// missing, the Debian package to install).
        public let problem: String?
    }

    /// Loads each library (once per process) and says whether it is usable.
    public static func check() -> [Status] {
        let libraries: [(CLazyLibraries_library, String)] = [
            (CLazyLibraries_avformat, "recordings, SRT, music and picture files"),
            (CLazyLibraries_swscale, "picture files, NV12 and I420 sources"),
            (CLazyLibraries_srt, "srt:// destinations"),
            (CLazyLibraries_openssl, "rtmps:// destinations"),
            (CLazyLibraries_microhttpd, "the dashboard"),
        ]
        return libraries.map { library, neededFor in
            Status(file: String(cString: CLazyLibraries_file_name(library)), neededFor: neededFor,
                   problem: CLazyLibraries_check(library).map { String(cString: $0) })
        }
    }
}
