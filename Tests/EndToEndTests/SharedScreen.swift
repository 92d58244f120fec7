import Testing

/// The suites that paint on, or capture from, the one shared test Xvfb. Swift Testing runs
/// suites in parallel; nested in this serialized suite, they run one test at a time, so no
/// test's window lands in another test's capture.
@Suite(.serialized, .timeLimit(.minutes(10))) enum SharedScreen {}
