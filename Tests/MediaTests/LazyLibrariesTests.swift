import CLazyLibraries
import Glibc
import Testing

/// CLazyLibraries (issue 22): libavformat, libswscale, libsrt, OpenSSL and libmicrohttpd are loaded on
/// first use. Each loads with every function LivePush calls in it, and a library or a function that is
/// not there is an error naming it and the Debian package, not a crash.
@Suite(.timeLimit(.minutes(10)))
struct LazyLibrariesTests {
    private static let libraries: [(CLazyLibraries_library, String)] = [
        (CLazyLibraries_avformat, "libavformat.so.59"), (CLazyLibraries_swscale, "libswscale.so.6"),
        (CLazyLibraries_srt, "libsrt-gnutls.so.1.5"), (CLazyLibraries_openssl, "libssl.so.3"),
        (CLazyLibraries_microhttpd, "libmicrohttpd.so.12"),
    ]

    @Test func everyLibraryLoadsWithEveryFunctionLivePushCalls() {
        for (library, file) in Self.libraries {
            let message = CLazyLibraries_check(library).map { String(cString: $0) }
            #expect(message == nil, "\(file): \(message ?? "")")
            #expect(CLazyLibraries_is_loaded(library) == 1, "\(file)")
            #expect(String(cString: CLazyLibraries_file_name(library)) == file)
        }
    }

    @Test func aMissingLibraryIsNamedWithItsPackage() throws {
        let raw = try #require(CLazyLibraries_probe("libavformat.so.1", "libavformat59", "avformat_version"))
        defer { free(raw) }
        let message = String(cString: raw)
        #expect(message.hasPrefix("libavformat.so.1 could not be loaded ("), "\(message)")
        #expect(message.hasSuffix("); install the Debian package libavformat59"), "\(message)")
    }

    @Test func aMissingFunctionIsNamedWithItsLibraryAndPackage() throws {
        let raw = try #require(CLazyLibraries_probe("libswscale.so.6", "libswscale6", "sws_no_such_function"))
        defer { free(raw) }
        #expect(String(cString: raw)
            == "libswscale.so.6 has no function sws_no_such_function (a different version?); "
            + "install the Debian package libswscale6")
        #expect(CLazyLibraries_probe("libswscale.so.6", "libswscale6", "sws_scale") == nil)
    }
}
