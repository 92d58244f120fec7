@testable import LivePush
import Testing

/// Auto bitrate's decisions, one second at a time, from the figures the senders measure.
@Suite(.timeLimit(.minutes(10))) struct BitrateControllerTests {
    typealias Destination = BitrateController.Destination

    private func congested(carryingKbps: Int) -> Destination { Destination(queuedMs: 1500, sendRateKbps: carryingKbps) }
    private let calm = Destination(queuedMs: 50, sendRateKbps: 2000)

    @Test func aBuildingQueueLowersTheBitrateTowardWhatTheNetworkCarries() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 2500, enabled: true)
        // (1628 - 128) x 0.8 = 1200, but at most a halving a second.
        #expect(controller.update(destinations: [congested(carryingKbps: 1628)], audioKbps: 128) == 1250)
        #expect(controller.update(destinations: [congested(carryingKbps: 1628)], audioKbps: 128) == 1200)
        #expect(controller.lastChangeWasDown)
        // There, it holds while the margin drains the queue.
        #expect(controller.update(destinations: [congested(carryingKbps: 1628)], audioKbps: 128) == nil)
    }

    @Test(.timeLimit(.minutes(10))) func srtLossWithAShortSendBufferIsCongestionAndCountsAgainstWhatWasCarried() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 2000, enabled: true)
        // SRT keeps its buffer short and loses instead: 2128 kbps sent, 25 % lost = 1596 carried;
        // (1596 - 128) x 0.8 = 1174.
        let lossy = Destination(queuedMs: 250, sendRateKbps: 2128, lossPercent: 25)
        #expect(controller.update(destinations: [lossy], audioKbps: 128) == 1174)
        // 1 % loss with a short buffer is calm: three such seconds step up.
        let clean = Destination(queuedMs: 150, sendRateKbps: 1300, lossPercent: 1)
        #expect(controller.update(destinations: [clean], audioKbps: 128) == nil)
        #expect(controller.update(destinations: [clean], audioKbps: 128) == nil)
        #expect(controller.update(destinations: [clean], audioKbps: 128) == 1424)
    }

    @Test func neverUnderTheMinimum() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 700, enabled: true)
        #expect(controller.update(destinations: [congested(carryingKbps: 100)], audioKbps: 128) == 600)
        #expect(controller.update(destinations: [congested(carryingKbps: 100)], audioKbps: 128) == nil)
    }

    @Test func threeCalmSecondsStepBackUpByATenthOfTheTarget() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 1000, enabled: true)
        #expect(controller.update(destinations: [calm], audioKbps: 128) == nil)
        #expect(controller.update(destinations: [calm], audioKbps: 128) == nil)
        #expect(controller.update(destinations: [calm], audioKbps: 128) == 1250)
        #expect(!controller.lastChangeWasDown)
        for _ in 0..<30 { _ = controller.update(destinations: [calm], audioKbps: 128) }
        #expect(controller.currentKbps == 2500, "never above the target")
    }

    @Test func theSlowestDestinationSetsThePace() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 300, currentKbps: 1000, enabled: true)
        #expect(controller.update(destinations: [calm, congested(carryingKbps: 528)], audioKbps: 128) == 500)
        #expect(controller.update(destinations: [calm, congested(carryingKbps: 528)], audioKbps: 128) == 320)
    }

    @Test func withoutAutoBitrateOnlyTheTargetMovesIt() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 2500, enabled: false)
        #expect(controller.update(destinations: [congested(carryingKbps: 500)], audioKbps: 128) == nil)
        #expect(controller.setTarget(1800) == 1800)
    }

    @Test func aTargetBelowTheCurrentBitrateTakesEffectAtOnceAndARaisedMinimumLiftsIt() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 2000, enabled: true)
        #expect(controller.setTarget(1500) == 1500)
        #expect(controller.setMin(1600) == 1600)
        #expect(controller.setTarget(3000) == 3000, "a higher target on a calm network: at once")
    }

    @Test func aHigherTargetOnACongestedNetworkIsClimbedToInSteps() {
        var controller = BitrateController(targetKbps: 2500, minKbps: 600, currentKbps: 2000, enabled: true)
        #expect(controller.update(destinations: [congested(carryingKbps: 1500)], audioKbps: 128) != nil)
        #expect(controller.setTarget(4000) == nil, "congested: auto bitrate climbs as the network allows")
        #expect(controller.update(destinations: [Destination(queuedMs: 300, sendRateKbps: 1500)], audioKbps: 128) == nil)
        #expect(controller.setTarget(3500) == 3500, "no longer congested: at once")
    }
}

/// The run-time bitrate bounds of the SDK: codes and the encoder's rate.
@Suite(.timeLimit(.minutes(10))) struct RunTimeBitrateTests {
    @Test func targetAndMinimumAreCheckedAndATargetBelowTheRateLowersIt() throws {
        let pusher = try LivePusher(config: LivePushConfig())  // 1080p: target 2500, min 1200, initial 1800
        #expect(pusher.currentVideoBitrateKbps == 1800)
        #expect(pusher.setTargetVideoBitrate(kbps: 50) == LivePushErrorCode.invalidParameter)
        #expect(pusher.setTargetVideoBitrate(kbps: 1000) == LivePushErrorCode.invalidParameter, "under the minimum")
        #expect(pusher.setMinVideoBitrate(kbps: 3000) == LivePushErrorCode.invalidParameter, "over the target")
        #expect(pusher.setMinVideoBitrate(kbps: 600) == 0)
        #expect(pusher.setTargetVideoBitrate(kbps: 1000) == 0)
        #expect(pusher.currentVideoBitrateKbps == 1000)
        pusher.destroy()
    }
}
