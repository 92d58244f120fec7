@testable import LivePush
import Testing

/// The RTMP send queue's ring: first in, first out across the wrap, growth past its capacity,
/// in-place removal in order, and no growth in steady state.
@Suite(.timeLimit(.minutes(10))) struct RingQueueTests {
    @Test func itGivesElementsBackInTheOrderTheyCameAcrossTheWrap() {
        var queue = RingQueue<Int>(capacity: 4)
        var taken: [Int] = []
        for value in 0..<3 { queue.append(value) }
        taken.append(queue.popFirst()!)
        taken.append(queue.popFirst()!)
        // head is now at slot 2: these wrap around the end of the ring.
        for value in 3..<6 { queue.append(value) }
        #expect(queue.count == 4)
        #expect(queue.capacity == 4)
        #expect(queue.first == 2)
        #expect(queue.last == 5)
        while let value = queue.popFirst() { taken.append(value) }
        #expect(taken == [0, 1, 2, 3, 4, 5])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }

    @Test func aFullRingDoublesAndKeepsTheOrder() {
        var queue = RingQueue<Int>(capacity: 2)
        queue.append(0)
        queue.append(1)
        _ = queue.popFirst()
        for value in 2..<7 { queue.append(value) }  // past capacity twice, from a wrapped head
        #expect(queue.capacity == 8)
        var taken: [Int] = []
        queue.forEach { taken.append($0) }
        #expect(taken == [1, 2, 3, 4, 5, 6])
    }

    @Test func removingWhereKeepsTheOthersInOrder() {
        var queue = RingQueue<Int>(capacity: 8)
        for value in 0..<6 { queue.append(value) }
        for _ in 0..<4 { _ = queue.popFirst() }
        for value in 6..<12 { queue.append(value) }  // wrapped: 4 ... 11
        queue.removeAll { $0 % 2 == 1 }
        var kept: [Int] = []
        while let value = queue.popFirst() { kept.append(value) }
        #expect(kept == [4, 6, 8, 10])
    }

    @Test func steadyStateReusesTheSlots() {
        var queue = RingQueue<String>(capacity: 4)
        for round in 0..<1000 {
            queue.append("a\(round)")
            queue.append("b\(round)")
            #expect(queue.popFirst() == "a\(round)")
            #expect(queue.popFirst() == "b\(round)")
        }
        #expect(queue.capacity == 4)
        queue.append("x")
        queue.removeAll()
        #expect(queue.isEmpty)
        #expect(queue.capacity == 4)
        #expect(queue.first == nil && queue.last == nil)
    }
}
