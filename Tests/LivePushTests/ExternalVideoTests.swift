import CaptureLink
import Foundation
import LinuxSystem
import LivePush
import Testing
import TestSupport

/// `sendVideoFrame`: an application that renders its own pictures pushes them without a helper,
/// in BGRA, NV12 and I420 with padded strides (the padding is white: read as picture it would
/// show), and nginx-rtmp receives them with their colours in their places.
@Suite(.enabled(if: TestEnvironment.isEnabled(.rtmp), "needs the test nginx-rtmp (make test)"), .timeLimit(.minutes(10)))
struct ExternalVideoTests {
    final class Publishing: LivePusherObserver, @unchecked Sendable {
        let lock = NSLock()
        var published = false, firstFrame = false
        func onPushStatusUpdate(status: PushStatus, message: String, extraInfo: [String: String]) {
            if status == .connectSuccess { lock.withLock { published = true } }
        }
        func onCaptureFirstVideoFrame() { lock.withLock { firstFrame = true } }
        var isPublishing: Bool { lock.withLock { published } }
        var sawFirstFrame: Bool { lock.withLock { firstFrame } }
    }

    typealias RGB = (r: UInt8, g: UInt8, b: UInt8)
    static let red: RGB = (255, 0, 0), green: RGB = (0, 255, 0), blue: RGB = (0, 0, 255)
    /// BT.709 limited range Y, U, V of the three.
    static func yuv(_ colour: RGB) -> (y: UInt8, u: UInt8, v: UInt8) {
        colour == red ? (63, 102, 240) : colour == green ? (173, 42, 26) : (32, 240, 118)
    }

    /// A picture whose left half is `left` and right half `right`, planes padded with 0xFF to `padding` bytes a row.
    static func planes(_ format: ExternalPixelFormat, width: Int, height: Int, left: RGB, right: RGB, padding: Int)
        -> (planes: [[UInt8]], strides: [Int])
    {
        switch format {
        case .bgra:
            let stride = width * 4 + padding
            var plane = [UInt8](repeating: 0xFF, count: stride * height)
            for y in 0..<height {
                for x in 0..<width {
                    let colour = x < width / 2 ? left : right
                    plane.replaceSubrange(y * stride + x * 4..<y * stride + x * 4 + 4, with: [colour.b, colour.g, colour.r, 255])
                }
            }
            return ([plane], [stride])
        case .nv12, .i420:
            let (l, r) = (yuv(left), yuv(right))
            let yStride = width + padding, cWidth = width / 2
            var luma = [UInt8](repeating: 0xFF, count: yStride * height)
            for y in 0..<height { for x in 0..<width { luma[y * yStride + x] = x < width / 2 ? l.y : r.y } }
            if format == .nv12 {
                let cStride = width + padding
                var chroma = [UInt8](repeating: 0xFF, count: cStride * height / 2)
                for y in 0..<height / 2 {
                    for x in 0..<cWidth {
                        let c = x < cWidth / 2 ? l : r
                        chroma[y * cStride + 2 * x] = c.u
                        chroma[y * cStride + 2 * x + 1] = c.v
                    }
                }
                return ([luma, chroma], [yStride, cStride])
            }
            let cStride = cWidth + padding
            var u = [UInt8](repeating: 0xFF, count: cStride * height / 2), v = u
            for y in 0..<height / 2 {
                for x in 0..<cWidth {
                    u[y * cStride + x] = x < cWidth / 2 ? l.u : r.u
                    v[y * cStride + x] = x < cWidth / 2 ? l.v : r.v
                }
            }
            return ([luma, u, v], [yStride, cStride, cStride])
        }
    }

    static func send(_ pusher: LivePusher, _ format: ExternalPixelFormat, width: Int, height: Int, planes: [[UInt8]],
                     strides: [Int]) -> Int32
    {
        func nest(_ index: Int, _ pointers: [UnsafeRawBufferPointer]) -> Int32 {
            guard index < planes.count else {
                return pusher.sendVideoFrame(ExternalVideoFrame(format: format, width: width, height: height, planes: pointers,
                                                                strides: strides, ptsNs: MonotonicClock.nowNs()))
            }
            return planes[index].withUnsafeBytes { nest(index + 1, pointers + [$0]) }
        }
        return nest(0, [])
    }

    /// The primary `pixel` shows: its channel over 180, the others under 60 (what a 4x4 scale of
    /// the decoded picture gives for a saturated half; padding read as picture would be white).
    private func close(_ pixel: ArraySlice<UInt8>, _ colour: RGB) -> Bool {
        zip(Array(pixel), [colour.r, colour.g, colour.b]).allSatisfy { value, wanted in wanted == 255 ? value > 180 : value < 60 }
    }

    @Test func framesInEachFormatReachNginxWithTheirColoursInPlace() throws {
        var config = LivePushConfig()
        config.resolution = .size(width: 320, height: 240)
        config.fps = 30
        let observer = Publishing()
        let pusher = try LivePusher(config: config, observer: observer)
        let bgra = Self.planes(.bgra, width: 320, height: 240, left: Self.red, right: Self.green, padding: 64)
        #expect(Self.send(pusher, .bgra, width: 320, height: 240, planes: bgra.planes, strides: bgra.strides) == -1,
                "no capture started")
        try pusher.startExternalVideo()
        let key = UniqueName.make("external")
        #expect(pusher.startPush(url: try TestEnvironment.recordURL(key: key)) == 0)
        #expect(waitUntil(timeoutSeconds: 15) { observer.isPublishing })
        Thread.sleep(forTimeInterval: 0.5)  // let it run: 0.5 s of stream (its first keyframe) before the pictures
        let nv12 = Self.planes(.nv12, width: 320, height: 240, left: Self.green, right: Self.blue, padding: 32)
        let i420 = Self.planes(.i420, width: 640, height: 480, left: Self.blue, right: Self.red, padding: 16)
        let phases: [(ExternalPixelFormat, Int, Int, (planes: [[UInt8]], strides: [Int]))] =
            [(.bgra, 320, 240, bgra), (.nv12, 320, 240, nv12), (.i420, 640, 480, i420)]
        for (format, width, height, picture) in phases {
            let startNs = MonotonicClock.nowNs()
            for index in 0..<45 {  // 1.5 s at 30 fps
                MonotonicClock.sleep(untilNs: startNs + UInt64(index) * 33_333_333)
                #expect(Self.send(pusher, format, width: width, height: height, planes: picture.planes,
                                  strides: picture.strides) == 0)
            }
        }
        // A stride shorter than a row, and a time that goes back, are refused.
        #expect(Self.send(pusher, .bgra, width: 320, height: 240, planes: bgra.planes, strides: [100]) == -2)
        let sample = ExternalVideoFrame(format: .bgra, width: 320, height: 240, planes: [], strides: [], ptsNs: 1)
        #expect(sample.problem?.contains("needs 1 plane(s)") == true)
        #expect(observer.sawFirstFrame)
        pusher.stopPush()
        pusher.destroy()

        let frames = try ReceivedStream.tinyFrames(try TestEnvironment.recordedFile(key: key).path)
        // Row 1 of the 4x4 picture: column 0 is the left half's colour, column 3 the right half's.
        func phase(_ left: RGB, _ right: RGB) -> Int {
            frames.filter { close($0[12..<15], left) && close($0[21..<24], right) }.count
        }
        #expect(phase(Self.red, Self.green) >= 30, "BGRA frames red|green: \(phase(Self.red, Self.green)) of \(frames.count)")
        #expect(phase(Self.green, Self.blue) >= 30, "NV12 frames green|blue: \(phase(Self.green, Self.blue)) of \(frames.count)")
        #expect(phase(Self.blue, Self.red) >= 30, "I420 frames blue|red: \(phase(Self.blue, Self.red)) of \(frames.count)")
    }
}
