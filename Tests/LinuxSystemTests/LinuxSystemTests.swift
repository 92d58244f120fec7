import Foundation
import Synchronization
import LinuxSystem
import Testing

/// The clock every process shares, thread names as Linux shows them, and a failed call in words.
@Suite struct LinuxSystemTests {
    @Test func theClockNeverGoesBackAndAnAbsoluteSleepEndsAtItsDeadline() {
        var previousNs = MonotonicClock.nowNs()
        for _ in 0..<10_000 {
            let nowNs = MonotonicClock.nowNs()
            #expect(nowNs >= previousNs)
            previousNs = nowNs
        }
        let deadlineNs = MonotonicClock.nowNs() + 20_000_000
        #expect(MonotonicClock.sleep(untilNs: deadlineNs))
        #expect(MonotonicClock.nowNs() >= deadlineNs)
        #expect(abs(MonotonicClock.nowMs() - Int(MonotonicClock.nowNs() / 1_000_000)) <= 1)
    }

    @Test func aThreadNamedByItselfShowsThatNameInProc() {
        let done = DispatchSemaphore(value: 0)
        let seen = Mutex("")
        let thread = Thread {
            ThreadName.setCurrent("livepush-test")
            let name = ThreadName.current()
            seen.withLock { $0 = name }
            done.signal()
        }
        thread.start()
        done.wait()
        #expect(seen.withLock { $0 } == "livepush-test")
    }

    @Test func aFailedCallIsNamedWithItsErrnoInWords() {
        #expect(throws: SystemCallError("open", errno: ENOENT)) {
            try systemCall("open") { open("/nonexistent/livepush", O_RDONLY) }
        }
        #expect(SystemCallError("open", errno: ENOENT).description == "open failed: No such file or directory (errno 2)")
    }

    @Test func cpuTimeGrowsWithWork() {
        let startSeconds = CPUTime.threadSeconds()
        var sum = 0.0
        for index in 0..<2_000_000 { sum += Double(index).squareRoot() }
        #expect(sum > 0)
        #expect(CPUTime.threadSeconds() > startSeconds)
        #expect(CPUTime.processSeconds() >= CPUTime.threadSeconds())
    }
}
