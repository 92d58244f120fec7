import ScreenCapture
import Testing
import TestSupport

@Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
struct X11DisplayTests {
    @Test func testDisplayOpensWithItsScreenSize() throws {
        let display = try X11Display(displayName: try TestEnvironment.display())
        let size = try TestEnvironment.screenSize()
        #expect(display.screenWidth == size.width)
        #expect(display.screenHeight == size.height)
        #expect(display.rootDepth == 24)
    }

    @Test func testDisplayOffersMITSHMWithDescriptorPassing() throws {
        let display = try X11Display(displayName: try TestEnvironment.display())
        let version = try #require(display.sharedMemoryVersion(), "the test Xvfb must run with MIT-SHM")
        #expect(version.supportsFileDescriptors, "MIT-SHM \(version) cannot attach a memfd (needs 1.2)")
    }
}

@Suite(.timeLimit(.minutes(10))) struct X11DisplayErrorTests {
    @Test func emptyDisplayNameIsNoDisplay() {
        #expect(throws: X11Error.noDisplay) { try X11Display(displayName: "") }
    }

    @Test func displayWithNoServerSaysNoServerAnswers() {
        do {
            _ = try X11Display(displayName: ":4999")
            Issue.record("display :4999 should not exist")
        } catch {
            #expect(error.description.hasPrefix("cannot open X display ':4999': no X server answers there"))
        }
    }

    @Test func malformedDisplayNameSaysHowToWriteOne() {
        #expect(throws: X11Error.cannotConnect(
            display: "nonsense", reason: "the display name could not be parsed; use the form :N or host:N")) {
            try X11Display(displayName: "nonsense")
        }
    }
}
