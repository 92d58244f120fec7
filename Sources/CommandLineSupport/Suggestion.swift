/// "Did you mean ...?": the candidate nearest a mistyped name, for options and for what they name
/// (an option, a camera).
public enum Suggestion {
    /// The candidate nearest to `name` by edit distance, when it is near enough to be a typo (at most a
    /// third of `name`'s characters differ, one at least); nil otherwise.
    public static func nearest(to name: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, editDistance(name, $0)) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        return best.1 <= max(1, name.count / 3) ? best.0 : nil
    }

    /// The insertions, deletions, substitutions and swaps of two neighbours (`rmtp` for `rtmp`: one) that
    /// turn `a` into `b` (optimal string alignment distance).
    public static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var beforePrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], beforePrevious[j - 2] + 1)
                }
            }
            beforePrevious = previous
            previous = current
        }
        return previous[b.count]
    }
}
