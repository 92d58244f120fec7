import CaptureLink
import Foundation
import Synchronization
import Testing
import TestSupport

extension SharedScreen {
    /// livepush-capture on the test Xvfb, against a pusher endpoint in the test: an X client the
    /// test controls (tools/testclients/x11-paint.c) paints known pixels, and the frames that
    /// arrive must hold exactly those pixels. Serialized: the tests share one screen.
    @Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs the test Xvfb (make test)"), .timeLimit(.minutes(10)))
    final class X11CaptureTests {
        /// A frame copied out of the ring: BGRx, `width * 4` bytes a row.
        struct Picture {
            let info: FrameInfo
            let pixels: [UInt8]
            func bgr(_ x: Int, _ y: Int) -> [UInt8] {
                let offset = (y * info.width + x) * 4
                return Array(pixels[offset..<offset + 3])
            }
        }

        /// A pusher endpoint in this process and a livepush-capture process feeding it.
        final class Session {
            let recorder = EventRecorder()
            let endpoint: PusherEndpoint
            let helper: RunningCommand
            let helperEnvironment: [String: String]

            init(_ arguments: [String], display: String? = nil) throws {
                let runtime = privateRuntimeDirectory()
                helperEnvironment = ["XDG_RUNTIME_DIR": runtime]
                var configuration = PusherEndpointConfiguration(group: "x11")
                configuration.runtimeDirectory = runtime
                configuration.fps = 30
                let recorder = self.recorder
                endpoint = try PusherEndpoint(configuration: configuration) { recorder.record($0) }
                helper = try ProcessRunner.start(BuiltProducts.path("livepush-capture"),
                                                 ["--group", "x11", "--display", try display ?? TestEnvironment.display()]
                                                    + arguments,
                                                 environment: ["XDG_RUNTIME_DIR": runtime])
            }

            /// A frame captured after `afterSequence`, copied out of the ring.
            func picture(after afterSequence: UInt64 = 0, timeoutSeconds: Double = 5) -> Picture? {
                let deadline = Date().addingTimeInterval(timeoutSeconds)
                while Date() < deadline {
                    if let frame = endpoint.acquireLatestFrame() {
                        defer { frame.release() }
                        if frame.info.sequence > afterSequence {
                            let info = frame.info
                            var pixels = [UInt8](repeating: 0, count: info.width * info.height * 4)
                            frame.withPlanes { planes in
                                for y in 0..<info.height {
                                    let source = UnsafeRawBufferPointer(rebasing: planes[0][(y * info.strides[0])...]
                                        .prefix(info.width * 4))
                                    pixels.withUnsafeMutableBytes {
                                        UnsafeMutableRawBufferPointer(rebasing: $0[(y * info.width * 4)...])
                                            .copyMemory(from: source)
                                    }
                                }
                            }
                            return Picture(info: info, pixels: pixels)
                        }
                    }
                    Thread.sleep(forTimeInterval: 0.02)
                }
                return nil
            }

            func stop() -> CommandResult {
                endpoint.requestStop()
                let result = helper.finish()
                endpoint.stop()
                return result
            }
        }

        /// Starts the painter and waits until its pixels are on screen; returns it and its window id.
        func paint(_ arguments: [String]) throws -> (RunningCommand, String) { try X11Painter.start(arguments) }

        @Test func solidColourRegionArrivesExactly() throws {
            let (painter, _) = try paint(["--geometry", "200x100+50+60", "solid", "ff0000"])
            defer { painter.closeInput(); _ = painter.finish() }
            let session = try Session(["--region", "50,60,200,100", "--no-cursor"])
            let picture = try #require(session.picture(), "no frame arrived: \(session.helper.outputSoFar)")
            #expect(picture.info.width == 200 && picture.info.height == 100)
            #expect(picture.info.format == .bgrx)
            var wrong = 0
            for y in 0..<100 { for x in 0..<200 where picture.bgr(x, y) != [0x00, 0x00, 0xFF] { wrong += 1 } }
            #expect(wrong == 0, "\(wrong) pixels are not pure red")
            #expect(session.stop().exitCode == 0)
        }

        @Test func checkerboardWindowByIdArrivesExactly() throws {
            let (painter, window) = try paint(["--geometry", "320x240+400+300", "checker", "10", "00ff00", "0000ff"])
            defer { painter.closeInput(); _ = painter.finish() }
            let session = try Session(["--window", window, "--no-cursor"])
            let picture = try #require(session.picture())
            #expect(picture.info.width == 320 && picture.info.height == 240)
            var wrong = 0
            for y in 0..<240 {
                for x in 0..<320 {
                    let expected: [UInt8] = (x / 10 + y / 10) % 2 == 0 ? [0x00, 0xFF, 0x00] : [0xFF, 0x00, 0x00]
                    if picture.bgr(x, y) != expected { wrong += 1 }
                }
            }
            #expect(wrong == 0, "\(wrong) checkerboard pixels wrong")
            let stopped = session.stop()
            #expect(stopped.exitCode == 0, "\(stopped)")
        }

        @Test func windowFoundByNameIsFollowedWhenItMovesAndResizes() throws {
            let name = UniqueName.make("follow")
            let (painter, _) = try paint(["--geometry", "160x120+700+200", "--name", name, "solid", "00ffff"])
            defer { painter.closeInput(); _ = painter.finish() }
            let session = try Session(["--window-name", name, "--no-cursor"])
            let first = try #require(session.picture())
            #expect(first.info.width == 160 && first.info.height == 120 && first.bgr(80, 60) == [0xFF, 0xFF, 0x00])
            #expect(first.info.flags.contains(.formatChanged))

            painter.send(line: "move 900 500")
            _ = painter.waitForLine(startingWith: "moved ")
            let moved = try #require(session.picture(after: first.info.sequence + 3))
            #expect(moved.info.width == 160 && moved.bgr(0, 0) == [0xFF, 0xFF, 0x00] && moved.bgr(159, 119) == [0xFF, 0xFF, 0x00])

            painter.send(line: "resize 240 180")
            _ = painter.waitForLine(startingWith: "resized ")
            let resized = try #require(session.picture(after: moved.info.sequence + 3))
            #expect(resized.info.width == 240 && resized.info.height == 180)
            #expect(resized.bgr(239, 179) == [0xFF, 0xFF, 0x00])
            #expect(session.stop().exitCode == 0)
        }

        @Test func closedWindowFinishesWithItsReason() throws {
            let (painter, window) = try paint(["--geometry", "100x100+1200+100", "solid", "ffffff"])
            let session = try Session(["--window", window])
            _ = try #require(session.picture())
            painter.send(line: "quit")
            _ = painter.finish()
            let finished = try #require(session.recorder.wait { $0.finished != nil }?.finished)
            #expect(finished.0 == FinishReason.sourceClosed.rawValue)
            #expect(finished.1 == "the captured window \(window) was closed")
            let result = session.helper.finish()
            #expect(result.exitCode == 0)
            #expect(result.standardError.contains("the captured window \(window) was closed"))
            session.endpoint.stop()
        }

        @Test func movingSquareMovesBetweenFrames() throws {
            let (painter, _) = try paint(["--geometry", "400x100+100+800", "square", "000000", "ffffff", "20", "8"])
            defer { painter.closeInput(); _ = painter.finish() }
            let session = try Session(["--region", "100,800,400,100", "--no-cursor", "--fps", "30"])
            func squareLeft(_ picture: Picture) -> Int? {
                (0..<400).first { picture.bgr($0, 50) == [0xFF, 0xFF, 0xFF] }
            }
            let first = try #require(session.picture())
            let later = try #require(session.picture(after: first.info.sequence + 6))
            // Only the two colours, and a 20-pixel square row somewhere.
            #expect(first.pixels.enumerated().allSatisfy { $0.offset % 4 == 3 || $0.element == 0 || $0.element == 0xFF })
            let a = try #require(squareLeft(first)), b = try #require(squareLeft(later))
            #expect(a != b, "the square did not move between frames \(first.info.sequence) and \(later.info.sequence)")
            #expect(session.stop().exitCode == 0)
        }

        @Test func cursorIsDrawnByDefaultAndLeftOutWithNoCursor() throws {
            // Xvfb starts with the pointer at the centre of the screen (960, 540), over this window.
            let (painter, _) = try paint(["--geometry", "200x200+860+440", "solid", "808080"])
            defer { painter.closeInput(); _ = painter.finish() }
            func differingPixels(_ arguments: [String]) throws -> (Int, FrameFlags) {
                let session = try Session(["--region", "860,440,200,200"] + arguments)
                defer { _ = session.stop() }
                let picture = try #require(session.picture())
                var count = 0
                for y in 0..<200 { for x in 0..<200 where picture.bgr(x, y) != [0x80, 0x80, 0x80] { count += 1 } }
                return (count, picture.info.flags)
            }
            let (withCursor, flagsWith) = try differingPixels([])
            let (withoutCursor, flagsWithout) = try differingPixels(["--no-cursor"])
            #expect(withCursor > 20, "the cursor should cover some pixels, \(withCursor) differ")
            #expect(flagsWith.contains(.cursor))
            #expect(withoutCursor == 0)
            #expect(!flagsWithout.contains(.cursor))
        }

        @Test func monitorByNameOrIndexIsTheWholeXvfbScreen() throws {
            let size = try TestEnvironment.screenSize()
            for monitor in ["0", "screen"] {
                let session = try Session(["--monitor", monitor, "--no-cursor"])
                let picture = try #require(session.picture())
                #expect(picture.info.width == size.width && picture.info.height == size.height)
                #expect(session.stop().exitCode == 0)
            }
        }

        @Test func damageSkipsGrabsOfAStillScreen() throws {
            let (painter, _) = try paint(["--geometry", "100x100+1500+700", "solid", "00ff00"])
            defer { painter.closeInput(); _ = painter.finish() }
            let session = try Session(["--region", "1500,700,100,100", "--no-cursor", "--damage"])
            _ = try #require(session.picture())
            let unchanged = session.recorder.wait(timeoutSeconds: 3) {
                if case .unchangedFrame = $0 { return true } else { return false }
            }
            #expect(unchanged != nil, "a still region should be sent as unchanged frames")
            #expect(session.stop().exitCode == 0)
        }

        @Test func unknownMonitorListsTheValidOnes() throws {
            let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
                "--group", "nobody", "--display", try TestEnvironment.display(), "--monitor", "HDMI-9",
            ])
            let size = try TestEnvironment.screenSize()
            #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
            #expect(result.standardError == "livepush-capture: no monitor 'HDMI-9'; the monitors are: "
                + "0 screen \(size.width)x\(size.height)+0+0\n")
        }

        @Test func unknownWindowSaysHowToListThem() throws {
            let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
                "--group", "nobody", "--display", try TestEnvironment.display(), "--window", "0x7fffff0",
            ])
            #expect(result.exitCode == 78, "EX_CONFIG: \(result)")
            #expect(result.standardError.hasPrefix("livepush-capture: no window '0x7fffff0'; visible top-level windows: "))
            #expect(result.standardError.contains("(livepush-capture --list shows them all)"))
        }

        @Test func pusherNotListeningNamesTheGroupAndPath() throws {
            let runtime = privateRuntimeDirectory()
            let result = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), [
                "--group", "absent", "--display", try TestEnvironment.display(), "--connect-timeout-ms", "300",
            ], environment: ["XDG_RUNTIME_DIR": runtime])
            #expect(result.exitCode == 1)
            #expect(result.standardError.hasPrefix(
                "livepush-capture: no pusher is listening on group 'absent' (\(runtime)/livepush/absent.sock) after "))
        }
    }
}

/// Capture on an Xvfb of the test's own: one it kills, one without MIT-SHM.
@Suite(.enabled(if: TestEnvironment.isEnabled(.x11), "needs Xvfb (make test)"), .timeLimit(.minutes(10)))
struct X11PrivateServerTests {
    /// Starts an Xvfb on a free display; returns it and its display name.
    private func startXvfb(_ extraArguments: [String] = []) throws -> (RunningCommand, String) {
        let xvfb = try ProcessRunner.start("Xvfb", ["-displayfd", "1", "-screen", "0", "640x480x24", "-nolisten", "tcp"]
            + extraArguments)
        let deadline = Date().addingTimeInterval(10)
        while xvfb.outputSoFar.isEmpty && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        return (xvfb, ":" + xvfb.outputSoFar.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test func withoutMITSHMFramesStillArriveAndTheHelperSaysWhyItIsSlower() throws {
        let (xvfb, display) = try startXvfb(["-extension", "MIT-SHM"])
        defer { kill(xvfb.processIdentifier, SIGKILL); _ = xvfb.finish() }
        let session = try SharedScreen.X11CaptureTests.Session(["--no-cursor"], display: display)
        let picture = try #require(session.picture(), "no frame from \(display): \(session.helper.outputSoFar)")
        #expect(picture.info.width == 640 && picture.info.height == 480)
        let result = session.stop()
        #expect(result.exitCode == 0)
        #expect(result.standardError.contains("livepush-capture: warning: no zero-copy capture: the X server offers "
            + "no MIT-SHM"))
    }

    @Test func secondHelperOnABusyGroupPrintsThePushersReason() throws {
        let (xvfb, display) = try startXvfb()
        defer { kill(xvfb.processIdentifier, SIGKILL); _ = xvfb.finish() }
        let session = try SharedScreen.X11CaptureTests.Session(["--no-cursor"], display: display)
        _ = try #require(session.picture())
        let runtime = try #require(session.helperEnvironment["XDG_RUNTIME_DIR"])
        let second = try ProcessRunner.run(BuiltProducts.path("livepush-capture"), ["--group", "x11", "--display", display],
                                           environment: ["XDG_RUNTIME_DIR": runtime])
        #expect(second.exitCode == 1)
        #expect(second.standardError.hasPrefix("livepush-capture: the pusher refused this helper (BUSY): group 'x11' "
            + "is busy: helper 'livepush-capture' (pid "))
        #expect(session.stop().exitCode == 0)
    }

    @Test func killedXServerEndsCaptureWithSourceLost() throws {
        let (xvfb, display) = try startXvfb()
        defer { if xvfb.isRunning { kill(xvfb.processIdentifier, SIGKILL) }; _ = xvfb.finish() }
        let session = try SharedScreen.X11CaptureTests.Session(["--no-cursor"], display: display)
        _ = try #require(session.picture(), "no frame from \(display): \(session.helper.outputSoFar)")
        kill(xvfb.processIdentifier, SIGKILL)
        let finished = try #require(session.recorder.wait { $0.finished != nil }?.finished)
        #expect(finished.0 == FinishReason.sourceLost.rawValue)
        #expect(finished.1.hasPrefix("the X server went away"))
        let result = session.helper.finish()
        #expect(result.exitCode == 1)
        #expect(result.standardError.contains("livepush-capture: the X server went away"))
        session.endpoint.stop()
    }
}
