import Glibc

/// The pusher's descriptor limit (issue 30): every connection, helper ring, file and PipeWire
/// stream is a descriptor, and the soft limit is often 1024 when the hard one is far higher. At
/// start the soft limit is raised to the hard one; nothing here uses select(), whose sets stop at
/// 1024. Children (capture helpers) inherit the raised limit.
enum DescriptorLimit {
    /// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the soft limit now.
    @discardableResult
    static func raiseToHard() -> rlim_t {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { return raised.rlim_cur }
        }
        return limit.rlim_cur
    }
}
