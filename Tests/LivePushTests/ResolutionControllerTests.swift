@testable import LivePush
import Testing

/// Adaptive resolution's decisions, one second at a time.
@Suite(.timeLimit(.minutes(10))) struct ResolutionControllerTests {
    typealias Size = ResolutionController.Size

    @Test func theLadderIsTheConfiguredSizeAndThePresetsUnderItAtItsAspect() {
        #expect(ResolutionController(width: 1920, height: 1080).ladder
            == [Size(width: 1920, height: 1080), Size(width: 1280, height: 720), Size(width: 960, height: 540),
                Size(width: 640, height: 360)])
        #expect(ResolutionController(width: 960, height: 540).ladder == [Size(width: 960, height: 540), Size(width: 640, height: 360)])
        #expect(ResolutionController(width: 1024, height: 768).ladder.map(\.description) == ["1024x768", "960x720", "720x540", "480x360"])
        #expect(ResolutionController(width: 320, height: 240).ladder.count == 1, "nothing under 360p")
    }

    @Test func congestionAtTheMinimumBitrateStepsDownAfterThreeSecondsThenHolds() {
        var controller = ResolutionController(width: 1920, height: 1080)
        let seconds = (0..<12).map { _ in controller.update(congested: true, calm: false, bitrateKbps: 600, minKbps: 600) }
        // Down at the 3rd second; 4 s of hold; then 3 more congested seconds: down again at the 10th.
        #expect(seconds.map { $0?.description } == [nil, nil, "1280x720", nil, nil, nil, nil, nil, nil, "960x540", nil, nil])
    }

    @Test func congestionAboveTheMinimumBitrateLeavesTheSizeToAutoBitrate() {
        var controller = ResolutionController(width: 1920, height: 1080)
        for _ in 0..<10 { #expect(controller.update(congested: true, calm: false, bitrateKbps: 900, minKbps: 600) == nil) }
        #expect(controller.size == Size(width: 1920, height: 1080))
    }

    @Test func aCalmNetworkWithTheBitrateClimbingStepsBackUp() {
        var controller = ResolutionController(width: 1280, height: 720)
        for _ in 0..<3 { _ = controller.update(congested: true, calm: false, bitrateKbps: 600, minKbps: 600) }
        #expect(controller.size == Size(width: 960, height: 540))
        for _ in 0..<4 { #expect(controller.update(congested: false, calm: true, bitrateKbps: 600, minKbps: 600) == nil) }
        // Calm for 6 s but still at the minimum: not yet (the network has not shown room).
        for _ in 0..<6 { #expect(controller.update(congested: false, calm: true, bitrateKbps: 600, minKbps: 600) == nil) }
        // Auto bitrate starts to climb after those calm seconds: up at once, then the hold.
        let up = (0..<5).map { _ in controller.update(congested: false, calm: true, bitrateKbps: 700, minKbps: 600) }
        #expect(up == [Size(width: 1280, height: 720), nil, nil, nil, nil])
        for _ in 0..<20 { #expect(controller.update(congested: false, calm: true, bitrateKbps: 900, minKbps: 600) == nil) }
    }

    @Test func theBottomRungIsTheLast() {
        var controller = ResolutionController(width: 960, height: 540)
        var changes: [Size] = []
        for _ in 0..<30 {
            if let size = controller.update(congested: true, calm: false, bitrateKbps: 300, minKbps: 300) { changes.append(size) }
        }
        #expect(changes == [Size(width: 640, height: 360)])
    }
}
