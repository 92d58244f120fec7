import CaptureLink
import Foundation
import Testing
import TestSupport

/// LPC_CAP_SCALE (SPEC clarification 28): a helper that scales is granted it and is asked with
/// CONFIG for the size the pusher wants (adaptive resolution); one without it is never asked
/// for less than WELCOME's maximum, since it may crop.
@Suite(.timeLimit(.minutes(10))) struct ScaleCapabilityTests {
    private struct Session {
        let pusher: PusherEndpoint
        let helper: HelperEndpoint
    }

    /// A pusher (limit 640x640) and a 320x240 helper asking for `capabilities`, started.
    private func startedSession(capabilities: Capabilities, wantedBeforeStart: (UInt32, UInt32)? = nil) throws -> Session {
        let runtime = privateRuntimeDirectory()
        let recorder = EventRecorder()
        var configuration = PusherEndpointConfiguration(group: "scale")
        configuration.runtimeDirectory = runtime
        configuration.maxWidth = 640
        configuration.maxHeight = 640
        let pusher = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
        if let wanted = wantedBeforeStart { pusher.requestMaxSize(width: wanted.0, height: wanted.1) }
        var helperConfiguration = HelperEndpointConfiguration(group: "scale", helperName: "swift-test", helperVersion: "1",
                                                              pixelFormats: [.bgrx], maxWidth: 320, maxHeight: 240)
        helperConfiguration.runtimeDirectory = runtime
        helperConfiguration.connectRetryMs = 2000
        helperConfiguration.capabilities = capabilities
        do {
            let helper = try HelperEndpoint(configuration: helperConfiguration)
            try helper.start(sourceInfo: "{}")
            return Session(pusher: pusher, helper: helper)
        } catch {
            pusher.stop()
            throw error
        }
    }

    /// The CONFIG sizes the helper receives within `seconds`, in order.
    private func configSizes(_ helper: HelperEndpoint, seconds: Double, until count: Int = .max) throws -> [String] {
        var sizes: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        while sizes.count < count && Date() < deadline {
            for request in try helper.poll(timeoutMs: 50) {
                if case .config(let config) = request { sizes.append("\(config.maxWidth)x\(config.maxHeight)") }
            }
        }
        return sizes
    }

    @Test func aHelperThatScalesIsGrantedItAndAskedForEachSizeAndForTheFullSizeAgain() throws {
        let session = try startedSession(capabilities: [.cursor, .scale])
        defer { session.pusher.stop() }
        #expect(session.helper.welcome.capabilities == [.cursor, .scale])
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["320x240"], "START's CONFIG: WELCOME's maximum")
        session.pusher.requestMaxSize(width: 160, height: 120)
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["160x120"])
        session.pusher.requestMaxSize(width: 1280, height: 720)  // beyond WELCOME's: WELCOME's
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["320x240"])
        session.pusher.requestMaxSize(width: 96, height: 54)
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["96x54"])
        session.pusher.requestFullSize()
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["320x240"])
        session.helper.finish(.user, text: "done")
    }

    @Test func aSizeWantedBeforeTheHelperStartedIsInTheConfigAfterStart() throws {
        let session = try startedSession(capabilities: [.scale], wantedBeforeStart: (160, 120))
        defer { session.pusher.stop() }
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["160x120"])
        session.helper.finish(.user, text: "done")
    }

    @Test func aHelperWithoutItIsNotGrantedItAndKeepsWelcomesMaximum() throws {
        let session = try startedSession(capabilities: [.cursor])
        defer { session.pusher.stop() }
        #expect(session.helper.welcome.capabilities == [.cursor])
        #expect(try configSizes(session.helper, seconds: 5, until: 1) == ["320x240"])
        session.pusher.requestMaxSize(width: 160, height: 120)
        // The pusher's link thread acts within 100 ms of the request; 1 s shows it sent nothing.
        #expect(try configSizes(session.helper, seconds: 1) == [], "a helper that may crop is never asked for less")
        session.helper.finish(.user, text: "done")
    }
}
