@testable import LivePush
import Testing

/// The reconnection schedule's arithmetic (docs/guide.md, "Reconnection"); its behaviour against a real
/// server is ReconnectionOutageTests' (a 60 s outage of nginx) and LifecycleCallbackTests'.
struct ReconnectScheduleTests {
    private let secondNs: UInt64 = 1_000_000_000

    @Test func theWaitDoublesFromTheIntervalToThirtySeconds() {
        var schedule = ReconnectSchedule(firstWaitMs: 2000, retryForMs: 0, maxAttempts: nil)
        let waits = (0..<8).map { _ in schedule.failed(atNs: secondNs, random: 0.5)?.waitMs }
        #expect(waits == [2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000])
    }

    @Test func jitterMovesAWaitByAtMostATenthAndNeverPastTheCap() {
        #expect(ReconnectSchedule.wait(attempt: 1, firstWaitMs: 2000, maxWaitMs: 30000, random: 0) == 1800)
        #expect(ReconnectSchedule.wait(attempt: 1, firstWaitMs: 2000, maxWaitMs: 30000, random: 1) == 2200)
        #expect(ReconnectSchedule.wait(attempt: 9, firstWaitMs: 2000, maxWaitMs: 30000, random: 0) == 27000)
        #expect(ReconnectSchedule.wait(attempt: 9, firstWaitMs: 2000, maxWaitMs: 30000, random: 1) == 30000)
        #expect(ReconnectSchedule.wait(attempt: 1000, firstWaitMs: 60000, maxWaitMs: 60000, random: 0.5) == 60000)
    }

    @Test func itGivesUpWhenItsTimeRunsOutAndTheLastAttemptIsAtTheDeadline() {
        var schedule = ReconnectSchedule(firstWaitMs: 2000, retryForMs: 10_000, maxAttempts: nil)
        #expect(schedule.failed(atNs: 100 * secondNs, random: 0.5) == .init(attempt: 1, waitMs: 2000))
        #expect(schedule.failed(atNs: 102 * secondNs, random: 0.5) == .init(attempt: 2, waitMs: 4000))
        #expect(schedule.failed(atNs: 106 * secondNs, random: 0.5) == .init(attempt: 3, waitMs: 4000), "to the deadline")
        #expect(schedule.failed(atNs: 110 * secondNs, random: 0.5) == nil)
    }

    @Test func aCountGivesUpFirstAndZeroGivesUpAtTheFirstFailure() {
        var two = ReconnectSchedule(firstWaitMs: 1000, retryForMs: 300_000, maxAttempts: 2)
        #expect(two.failed(atNs: secondNs, random: 0.5)?.attempt == 1)
        #expect(two.failed(atNs: secondNs, random: 0.5)?.attempt == 2)
        #expect(two.failed(atNs: secondNs, random: 0.5) == nil)
        var none = ReconnectSchedule(firstWaitMs: 1000, retryForMs: 300_000, maxAttempts: 0)
        #expect(none.failed(atNs: secondNs, random: 0.5) == nil)
    }

    @Test func aConnectionThatPublishesEndsTheOutage() {
        var schedule = ReconnectSchedule(firstWaitMs: 1000, retryForMs: 5000, maxAttempts: nil)
        _ = schedule.failed(atNs: 10 * secondNs, random: 0.5)
        _ = schedule.failed(atNs: 14 * secondNs, random: 0.5)
        schedule.connected()
        #expect(schedule.failed(atNs: 30 * secondNs, random: 0.5) == .init(attempt: 1, waitMs: 1000),
                "a new outage: its own time and count")
        #expect(schedule.describe(.init(attempt: 1, waitMs: 1000)) == "attempt 1, retrying for 5 s")
        #expect(ReconnectSchedule(firstWaitMs: 1000, retryForMs: 0, maxAttempts: nil).describe(.init(attempt: 4, waitMs: 8000))
            == "attempt 4, retrying for ever")
        #expect(ReconnectSchedule(firstWaitMs: 1000, retryForMs: 0, maxAttempts: 3).describe(.init(attempt: 2, waitMs: 2000))
            == "attempt 2 of 3")
    }
}
