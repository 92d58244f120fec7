import Foundation
import Testing
import TestSupport

extension SharedScreen {
    /// livepush links neither libavformat nor libswscale, libsrt, OpenSSL or libmicrohttpd (issue 22):
    /// they are loaded when a feature first calls them. Seen in /proc/PID/maps of the running pusher: a
    /// plain RTMP push maps none of them (and nginx gets a clean stream); a push with `--record` maps
    /// libavformat, and the recording decodes.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11) && TestEnvironment.isEnabled(.rtmp),
                    "needs the test Xvfb and nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
    struct LazyLibrariesPushTests {
        let livepush = BuiltProducts.path("livepush")
        private static let lazyFiles = ["libavformat.so.59", "libswscale.so.6", "libsrt-gnutls.so.1.5", "libssl.so.3",
                                        "libcrypto.so.3", "libmicrohttpd.so.12"]

        /// The file names of the shared objects process `pid` maps.
        private func mappedLibraries(_ pid: Int32) throws -> Set<String> {
            // Read to the end: /proc files say size 0, and a one-read reader gets only the first page.
            let handle = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
            defer { try? handle.close() }
            let maps = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
            return Set(maps.split(separator: "\n").compactMap { line in
                line.split(separator: " ", omittingEmptySubsequences: true).last.flatMap { path in
                    path.hasPrefix("/") ? String(path.split(separator: "/").last ?? "") : nil
                }
            })
        }

        /// Pushes the painted square for about 3 s with `options`; returns what the pusher mapped meanwhile.
        private func push(key: String, _ options: [String]) throws -> Set<String> {
            let broadcast = try LiveBroadcast(livepush: livepush, [
                "push", try TestEnvironment.recordURL(key: key), "--display", try TestEnvironment.display(),
                "--region", "400,100,320,240", "--resolution", "320x240", "--fps", "30", "--quiet", "--duration", "30",
            ] + options)
            #expect(try broadcast.waitUntilPublishing(), "\(broadcast.command.errorSoFar)")
            Thread.sleep(forTimeInterval: 3)  // let it run: frames encoded, sent and (with --record) written
            let mapped = try mappedLibraries(broadcast.command.processIdentifier)
            let result = broadcast.stop()
            #expect(result.exitCode == 0, "\(result)")
            return mapped
        }

        @Test func aPlainPushMapsNoLazyLibraryAndARecordingLoadsLibavformat() throws {
            let (painter, _) = try X11Painter.start(["--geometry", "320x240+400+100", "square", "102030", "f0c040",
                                                     "60", "4"])
            defer { painter.closeInput(); _ = painter.finish() }

            let plainKey = UniqueName.make("lazyplain")
            let plain = try push(key: plainKey, [])
            #expect(plain.contains { $0.hasPrefix("libavcodec.so.59") },
                    "the maps were read: libavcodec is there (\(plain.sorted()))")
            for file in Self.lazyFiles {
                #expect(!plain.contains { $0.hasPrefix(file) }, "a plain RTMP push mapped \(file)")
            }
            let received = try TestEnvironment.closedRecording(key: plainKey)
            #expect(try MediaProbe.decodeErrors(received).isEmpty)
            #expect(try MediaProbe.decodedFrameCount(received) >= 60)

            let file = FileManager.default.temporaryDirectory
                .appendingPathComponent(UniqueName.make("lazy") + ".mkv").path
            defer { try? FileManager.default.removeItem(atPath: file) }
            let recording = try push(key: UniqueName.make("lazyrec"), ["--record", file])
            #expect(recording.contains { $0.hasPrefix("libavformat.so.59") }, "--record loaded libavformat")
            // (libavformat brings libsrt and OpenSSL with it; libmicrohttpd and libswscale stay out.)
            #expect(!recording.contains { $0.hasPrefix("libmicrohttpd.so.12") || $0.hasPrefix("libswscale.so.6") },
                    "a recording loads only libavformat: \(recording.sorted())")
            #expect(try MediaProbe.decodeErrors(file).isEmpty)
            #expect(try MediaProbe.decodedFrameCount(file) >= 60)
        }
    }
}
