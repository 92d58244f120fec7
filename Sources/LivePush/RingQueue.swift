/// A first-in first-out queue on a ring of slots: `append` at the back and `removeFirst` at the
/// front cost no shifting and, once the ring has grown to the largest backlog seen, no allocation
/// (`PushOutput`'s send queue). It grows by doubling when full and never shrinks; `removeAll`
/// keeps the slots. Not thread-safe (the owner locks).
struct RingQueue<Element> {
    private var slots: [Element?]
    /// Index of the first element in `slots`.
    private var head = 0
    private(set) var count = 0

    init(capacity: Int = 64) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    var isEmpty: Bool { count == 0 }
    /// Slots the ring holds now (grows with the largest backlog).
    var capacity: Int { slots.count }
    var first: Element? { count == 0 ? nil : slots[head] }
    var last: Element? { count == 0 ? nil : slots[(head + count - 1) % slots.count] }

    mutating func append(_ element: Element) {
        if count == slots.count { grow() }
        slots[(head + count) % slots.count] = element
        count += 1
    }

    /// The oldest element, or nil when empty.
    mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head]
        slots[head] = nil
        head = (head + 1) % slots.count
        count -= 1
        return element
    }

    /// Empties the queue; its slots stay for reuse.
    mutating func removeAll() {
        while popFirst() != nil {}
        head = 0
    }

    /// Removes the elements for which `shouldRemove` is true, keeping the others in order.
    mutating func removeAll(where shouldRemove: (Element) -> Bool) {
        var kept = 0
        for offset in 0..<count {
            let index = (head + offset) % slots.count
            guard let element = slots[index] else { continue }
            slots[index] = nil
            if !shouldRemove(element) {
                slots[(head + kept) % slots.count] = element
                kept += 1
            }
        }
        count = kept
    }

    /// Visits the elements from the oldest to the newest.
    func forEach(_ body: (Element) -> Void) {
        for offset in 0..<count {
            if let element = slots[(head + offset) % slots.count] { body(element) }
        }
    }

    private mutating func grow() {
        var larger = [Element?](repeating: nil, count: slots.count * 2)
        for offset in 0..<count { larger[offset] = slots[(head + offset) % slots.count] }
        slots = larger
        head = 0
    }
}
