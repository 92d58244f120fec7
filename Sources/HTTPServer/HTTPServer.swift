import CMicroHTTPD
import Foundation

/// A request as the handler sees it: no C types.
public struct HTTPRequest: Sendable {
    public let method: String
    public let path: String
    public let query: [String: String]
    public let cookies: [String: String]
    /// The request's headers, names in lower case (`host`, `origin`, ...).
    public let headers: [String: String]

    public init(method: String, path: String, query: [String: String] = [:], cookies: [String: String] = [:],
                headers: [String: String] = [:]) {
        self.method = method
        self.path = path
        self.query = query
        self.cookies = cookies
        self.headers = headers
    }
}

/// Bounds on what clients can hold of the server (issue 30): every connection is a thread and a
/// descriptor, so idle ones are closed and their number is capped, in all and per client address.
/// Past a cap, new connections wait in the kernel's listen queue (no descriptor of ours) until one
/// ends.
public struct HTTPServerLimits: Sendable, Equatable {
    /// Seconds without a byte either way after which a connection is closed.
    public var connectionTimeoutS: UInt32
    public var maxConnections: UInt32
    public var maxConnectionsPerAddress: UInt32

    public init(connectionTimeoutS: UInt32, maxConnections: UInt32, maxConnectionsPerAddress: UInt32) {
        self.connectionTimeoutS = connectionTimeoutS
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }

    /// The dashboard's: a page uses about 8 connections (Chromium's 6 per host, the event stream,
    /// the picture), a few pages fit; a stream sends every second, so 15 s idle is a dead client.
    public static let dashboard = HTTPServerLimits(connectionTimeoutS: 15, maxConnections: 64,
                                                   maxConnectionsPerAddress: 32)
}

/// What the handler answers: a body, or a stream that stays open (Server-Sent Events).
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]
    public var headers: [(String, String)]
    public var stream: HTTPStream?

    public init(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
    }

    /// An open-ended response fed by `stream`.
    public static func streaming(_ stream: HTTPStream, contentType: String) -> HTTPResponse {
        var response = HTTPResponse(status: 200, contentType: contentType, body: [],
                                    headers: [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")])
        response.stream = stream
        return response
    }
}

/// Bytes for an open-ended response: `send` queues them, the server's connection thread takes
/// them. `onClose` runs once, when the client went away or `close` was called.
public final class HTTPStream: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [UInt8] = []
    private var closed = false
    private let maxPendingBytes = 4 * 1024 * 1024
    /// Sent when nothing else was for this long, so a gone client is noticed (SSE comment by default).
    public var keepAlive: [UInt8] = Array(": keep-alive\n\n".utf8)
    public var onClose: (@Sendable () -> Void)?

    public init() {}

    /// Queues `text`; a client that reads too slowly loses the connection rather than grow memory.
    public func send(_ text: String) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return }
        pending += text.utf8
        if pending.count > maxPendingBytes { closed = true }
        condition.signal()
    }

    public func close() {
        condition.lock()
        let wasClosed = closed
        closed = true
        condition.broadcast()
        condition.unlock()
        if !wasClosed { onClose?() }
    }

    /// Up to `max` bytes into `buffer`, waiting up to a second; -1 at the end.
    fileprivate func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        if pending.isEmpty && !closed { _ = condition.wait(until: Date(timeIntervalSinceNow: 1)) }
        if closed { return -1 }
        let source = pending.isEmpty ? keepAlive : pending
        let count = min(max, source.count)
        source.withUnsafeBufferPointer { bytes in
            buffer.withMemoryRebound(to: UInt8.self, capacity: count) { $0.update(from: bytes.baseAddress!, count: count) }
        }
        if !pending.isEmpty { pending.removeFirst(count) }
        return count
    }

    /// The connection ended (MHD freed the response).
    fileprivate func finished() {
        close()
    }
}

/// Why the server did not start.
public enum HTTPServerError: Error, CustomStringConvertible {
    case cannotStart(address: String, port: UInt16, reason: String)

    public var description: String {
        switch self {
        case .cannotStart(let address, let port, let reason):
            return "cannot serve HTTP on \(address):\(port): \(reason)"
        }
    }
}

/// An HTTP/1.1 server (libmicrohttpd, one thread per connection, `HTTPServerLimits` of them at
/// most) on one IPv4 address. Every request goes to `handler` on its connection's thread;
/// libmicrohttpd's types stay in here.
public final class HTTPServer: @unchecked Sendable {
    public let address: String
    public let port: UInt16
    let handler: @Sendable (HTTPRequest) -> HTTPResponse
    private var daemon: OpaquePointer?
    private let lock = NSLock()

    public init(address: String, port: UInt16, limits: HTTPServerLimits = .dashboard,
                handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws(HTTPServerError)
    {
        self.address = address
        self.handler = handler
        if let missing = CMicroHTTPD_library_missing() {
            throw .cannotStart(address: address, port: port,
                               reason: "the HTTP server is not available: \(String(cString: missing))")
        }
        var started: OpaquePointer?
        // The daemon keeps an unretained pointer to self: `stop` (or deinit) ends it first.
        let context = UnsafeMutableRawPointer(Unmanaged<HTTPBox>.passRetained(HTTPBox()).toOpaque())
        let box = Unmanaged<HTTPBox>.fromOpaque(context).takeUnretainedValue()
        errno = 0
        started = CMicroHTTPD_start(address, port, limits.connectionTimeoutS, limits.maxConnections,
                                    limits.maxConnectionsPerAddress, httpAccessHandler, httpRequestCompleted, context)
        guard let started else {
            Unmanaged<HTTPBox>.fromOpaque(context).release()
            let reason = errno == EINVAL ? "not an IPv4 address" : errno != 0 ? String(cString: strerror(errno)) : "libmicrohttpd refused"
            throw .cannotStart(address: address, port: port, reason: reason)
        }
        daemon = started
        self.port = CMicroHTTPD_bound_port(started)
        box.server = self
        self.context = context
    }

    private var context: UnsafeMutableRawPointer?

    deinit { stop() }

    /// Stops the daemon: open streams end, no handler runs afterwards.
    public func stop() {
        let (daemon, context) = lock.withLock { () -> (OpaquePointer?, UnsafeMutableRawPointer?) in
            defer {
                self.daemon = nil
                self.context = nil
            }
            return (self.daemon, self.context)
        }
        if let context { Unmanaged<HTTPBox>.fromOpaque(context).takeUnretainedValue().closeStreams() }
        if let daemon { MHD_stop_daemon(daemon) }
        if let context { Unmanaged<HTTPBox>.fromOpaque(context).release() }
    }
}

/// What the C callbacks reach through `Unmanaged`: the server (weak) and its open streams.
final class HTTPBox: @unchecked Sendable {
    weak var server: HTTPServer?
    private let lock = NSLock()
    private var streams: [ObjectIdentifier: HTTPStream] = [:]

    func track(_ stream: HTTPStream) { lock.withLock { streams[ObjectIdentifier(stream)] = stream } }
    func untrack(_ stream: HTTPStream) { _ = lock.withLock { streams.removeValue(forKey: ObjectIdentifier(stream)) } }
    func closeStreams() { lock.withLock { Array(streams.values) }.forEach { $0.close() } }
}

/// Collects one kind of connection value (query arguments, cookies) into a dictionary.
private final class ValueCollector {
    var values: [String: String] = [:]
}

private let collectValue: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return .YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
    collector.values[String(cString: key)] = value.map { String(cString: $0) } ?? ""
    return .YES
}

private func values(_ connection: OpaquePointer?, _ kind: MHD_ValueKind) -> [String: String] {
    let collector = ValueCollector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values(connection, kind, collectValue, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.values
}

/// Marks a request whose body (ignored) is being read, between MHD's calls.
nonisolated(unsafe) private let requestStarted = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

private let httpAccessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, _, uploadSize, requestContext in
    guard let context, let requestContext else { return .NO }
    // MHD calls once to announce the request, then with each piece of body, then to answer.
    if requestContext.pointee == nil {
        requestContext.pointee = requestStarted
        return .YES
    }
    if let uploadSize, uploadSize.pointee != 0 {
        uploadSize.pointee = 0
        return .YES
    }
    let box = Unmanaged<HTTPBox>.fromOpaque(context).takeUnretainedValue()
    guard let server = box.server else { return .NO }
    let headers = Dictionary(values(connection, .HEADER_KIND).map { ($0.key.lowercased(), $0.value) },
                             uniquingKeysWith: { first, _ in first })
    let request = HTTPRequest(method: method.map { String(cString: $0) } ?? "GET",
                              path: url.map { String(cString: $0) } ?? "/",
                              query: values(connection, .GET_ARGUMENT_KIND),
                              cookies: values(connection, .COOKIE_KIND), headers: headers)
    let answer = server.handler(request)
    let response: OpaquePointer?
    if let stream = answer.stream {
        box.track(stream)
        let pair = Unmanaged.passRetained(StreamContext(stream: stream, box: box)).toOpaque()
        response = MHD_create_response_from_callback(CMicroHTTPD_size_unknown(), 16 * 1024, streamReader, pair, streamFreed)
    } else {
        response = answer.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
    }
    guard let response else { return .NO }
    defer { MHD_destroy_response(response) }
    _ = MHD_add_response_header(response, "Content-Type", answer.contentType)
    for (name, value) in answer.headers { _ = MHD_add_response_header(response, name, value) }
    return MHD_queue_response(connection, UInt32(answer.status), response)
}

private let httpRequestCompleted: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
    requestContext?.pointee = nil
}

/// A stream and the box that tracks it, for the reader callbacks.
private final class StreamContext {
    let stream: HTTPStream
    let box: HTTPBox
    init(stream: HTTPStream, box: HTTPBox) {
        self.stream = stream
        self.box = box
    }
}

private let streamReader: MHD_ContentReaderCallback = { context, _, buffer, max in
    guard let context, let buffer else { return CMicroHTTPD_end_of_stream() }
    let pair = Unmanaged<StreamContext>.fromOpaque(context).takeUnretainedValue()
    let count = pair.stream.read(into: buffer, max: max)
    return count < 0 ? CMicroHTTPD_end_of_stream() : count
}

private let streamFreed: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    let pair = Unmanaged<StreamContext>.fromOpaque(context).takeRetainedValue()
    pair.box.untrack(pair.stream)
    pair.stream.finished()
}
