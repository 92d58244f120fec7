import Foundation
import RTMP
import Testing
import TestSupport

/// Our RTMP client over TLS against the real TLS front of the test environment (nginx's stream
/// module with ssl before nginx-rtmp): one front per certificate case, each failure of its own kind.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmps), "needs the test TLS front (make test)"), .timeLimit(.minutes(10)))
struct RTMPSPublishTests {
    private func publishError(_ text: String, caFile: String?) throws -> RTMPError {
        let url = try RTMPURL(text)
        do throws(RTMPError) {
            let publisher = try RTMPPublisher(url: url, caFile: caFile, timeoutMs: 3000)
            publisher.finish()
        } catch {
            return error
        }
        throw PublishedAnyway(url: text)
    }

    struct PublishedAnyway: Error { let url: String }

    @Test(.timeLimit(.minutes(10))) func theTestCAMakesTheHandshakeAndThePublishWork() throws {
        let url = try RTMPURL(try TestEnvironment.rtmpsURL(app: "live", key: UniqueName.make("tls")))
        let publisher = try RTMPPublisher(url: url, caFile: try TestEnvironment.testCAFile())
        publisher.finish()
    }

    @Test(.timeLimit(.minutes(10))) func withoutTheCAFileTheCertificateIsUntrusted() throws {
        let error = try publishError(try TestEnvironment.rtmpsURL(key: "k"), caFile: nil)
        #expect(error.kind == .certificateUntrusted, "\(error)")
        #expect(error.step == .connect)
        #expect(error.detail.contains("--ca-file"), "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func aCertificateFromAnotherCAIsUntrusted() throws {
        let error = try publishError(try TestEnvironment.rtmpsURL(.untrusted, key: "k"),
                                     caFile: try TestEnvironment.testCAFile())
        #expect(error.kind == .certificateUntrusted, "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func aCertificateForAnotherNameIsANameMismatch() throws {
        let error = try publishError(try TestEnvironment.rtmpsURL(.wrongName, key: "k"),
                                     caFile: try TestEnvironment.testCAFile())
        #expect(error.kind == .certificateNameMismatch, "\(error)")
        #expect(error.detail.contains("not for '127.0.0.1'"), "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func anExpiredCertificateIsExpired() throws {
        let error = try publishError(try TestEnvironment.rtmpsURL(.expired, key: "k"),
                                     caFile: try TestEnvironment.testCAFile())
        #expect(error.kind == .certificateExpired, "\(error)")
        #expect(error.detail.contains("certificate has expired"), "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func aServerOfferingOnlyTLS10FailsTheHandshake() throws {
        let error = try publishError(try TestEnvironment.rtmpsURL(.oldTLS, key: "k"),
                                     caFile: try TestEnvironment.testCAFile())
        #expect(error.kind == .tlsHandshakeFailed, "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func plainRTMPBehindAnRTMPSURLIsNotTLS() throws {
        let plain = try TestEnvironment.value("LIVEPUSH_TEST_RTMP_URL", of: .rtmp)
        let error = try publishError(plain.replacingOccurrences(of: "rtmp://", with: "rtmps://") + "/live/k",
                                     caFile: try TestEnvironment.testCAFile())
        #expect(error.kind == .notTLS, "\(error)")
        #expect(error.detail.contains("plain RTMP server"), "\(error)")
    }

    @Test(.timeLimit(.minutes(10))) func aCAFileThatIsNotPEMIsUnreadable() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(UniqueName.make("ca")).path
        try Data("not a certificate\n".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let error = try publishError(try TestEnvironment.rtmpsURL(key: "k"), caFile: path)
        #expect(error.kind == .caFileUnreadable, "\(error)")
        #expect(error.detail.contains(path), "\(error)")
    }
}
