import Histogram

/// Every latency the generator records. Values are microseconds.
public enum LatencyMetric: Int, CaseIterable, Sendable, Codable {
    /// Own message → own echo, from the intended send time (coordinated omission corrected).
    case roundTrip
    /// Own message → own echo, from the moment the bytes were handed to the socket.
    case roundTripUncorrected
    /// Another client's message → its broadcast arriving here, from the sender's intended time.
    case fanout
    /// As `fanout`, from the sender's actual send time.
    case fanoutUncorrected
    /// TCP three-way handshake (connect() until writable).
    case tcpConnect
    /// TLS: TCP connection established → TLS handshake done (full and resumed together).
    case tlsHandshake
    /// WebSocket upgrade request sent → 101 response parsed (hub clients: transport request →
    /// transport usable, for SSE and long polling too).
    case upgrade
    /// Hub clients: negotiate request → response parsed (redirects included).
    case negotiate
    /// Hub clients: handshake request sent → handshake response.
    case handshake
    /// Hub clients: stream invocation's intended send time → each StreamItem.
    case streamItem
    /// Chat clients: WebSocket ping → its pong.
    case pingRoundTrip
    /// REST clients: a poll's intended time → its whole response, by status class.
    case http2xx
    case http3xx
    case http4xx
    case http5xx
    /// REST clients: request written → whole response, any status.
    case httpUncorrected
    /// REST clients: the server's change time of a resource → the first poll that saw it.
    case staleness
    /// Socket.IO clients: the first transport request (a polling GET, or a WebSocket's upgrade)
    /// → Engine.IO's open packet.
    case eioHandshake
    /// Socket.IO clients: CONNECT sent → the namespace's CONNECT answer.
    case namespaceConnect
    /// Socket.IO clients: an emit's intended send time → its ack (coordinated omission corrected).
    case ack
    /// As `ack`, from the moment the emit was handed to the transport.
    case ackUncorrected

    /// Key used in summary.json and file names.
    public var key: String {
        switch self {
        case .roundTrip: "round_trip"
        case .roundTripUncorrected: "round_trip_uncorrected"
        case .fanout: "fanout"
        case .fanoutUncorrected: "fanout_uncorrected"
        case .tcpConnect: "tcp_connect"
        case .upgrade: "ws_upgrade"
        case .negotiate: "negotiate"
        case .handshake: "handshake"
        case .streamItem: "stream_item"
        case .pingRoundTrip: "ping_round_trip"
        case .http2xx: "http_2xx"
        case .http3xx: "http_3xx"
        case .http4xx: "http_4xx"
        case .http5xx: "http_5xx"
        case .httpUncorrected: "http_uncorrected"
        case .staleness: "staleness"
        case .tlsHandshake: "tls_handshake"
        case .eioHandshake: "eio_handshake"
        case .namespaceConnect: "namespace_connect"
        case .ack: "ack"
        case .ackUncorrected: "ack_uncorrected"
        }
    }
}

/// Counted events. Indexes a fixed array so counting never allocates.
public enum Counter: Int, CaseIterable, Sendable, Codable {
    case connectAttempts
    case connected
    case connectFailed
    /// Connections that ended after being established (any reason).
    case disconnected
    case messagesSent
    /// Own messages whose echo came back (the sender's delivery receipt).
    case messagesDelivered
    /// Own messages the server answered with an error (none for chat; kept for other workloads).
    case messagesFailed
    /// Own messages that can no longer be delivered (see `LossReason`).
    case messagesLost
    /// Broadcasts of other clients' messages received.
    case fanoutReceived
    /// Broadcasts expected: messages sent × (clients connected − 1) when the message phase began.
    case fanoutExpected
    /// Sends that were due but waited because the socket's write queue was over its limit.
    case sendsDeferred
    case bytesSent
    case bytesReceived
    /// Frames that were not ours to parse as chat messages (server text we could not read).
    case unparsedMessages
    /// Chat clients: application heartbeats and WebSocket pings sent, and pongs received.
    case heartbeatsSent
    case pingsSent
    case pongsReceived
    /// Hub clients: StreamItems received.
    case streamItems
    /// Hub clients: streams the client cancelled (CancelInvocation) after `cancel_after_items`.
    case streamsCancelled
    /// Hub clients: server invocations answered with a configured client result.
    case clientResults
    /// Hub clients: reconnect attempts started, and those that ended connected again.
    case reconnectAttempts
    case reconnected
    /// Hub clients: connections established, and calls sent, per transport (fallback can mix them).
    case connectedWebSockets
    case connectedServerSentEvents
    case connectedLongPolling
    case sentWebSockets
    case sentServerSentEvents
    case sentLongPolling
    /// Churn events: clients that left (a clean close), and new clients that joined in their place.
    case churnLeft
    case churnJoined
    /// REST clients: 304 answers, changed representations, answers no processor handled,
    /// clients stopped (an auth failure or a stopping processor), redirects followed, and
    /// answers that carried rate-limit headers or a Retry-After.
    case notModified
    case changed
    case unprocessed
    case clientsStopped
    case redirectsFollowed
    case rateLimitHeadersSeen
    case retryAfterSeen
    /// TLS handshakes completed by clients, and those that resumed an earlier session.
    case tlsHandshakes
    case tlsResumed
    /// WebSocket flows: frames no rule recognised (up to three kept in `MetricsShard.samples`),
    /// frames an `ignore` rule dropped, and frames a `respond` rule answered.
    case unrecognisedFrames
    case flowIgnored
    case flowResponded
    /// Socket.IO clients: WebSocket upgrades from long polling that completed, and those that
    /// failed (the client stays on polling, as the official client does); acks received.
    case upgraded
    case upgradesFailed
    case acksReceived
    /// `clients.stages`: clients that joined as the profile rose, and clients that left (a clean
    /// close, not an error) as it fell.
    case rampedUp
    case rampedDown

    public var key: String {
        switch self {
        case .connectAttempts: "connect_attempts"
        case .connected: "connected"
        case .connectFailed: "connect_failed"
        case .disconnected: "disconnected"
        case .messagesSent: "messages_sent"
        case .messagesDelivered: "messages_delivered"
        case .messagesFailed: "messages_failed"
        case .messagesLost: "messages_lost"
        case .fanoutReceived: "fanout_received"
        case .fanoutExpected: "fanout_expected"
        case .sendsDeferred: "sends_deferred"
        case .bytesSent: "bytes_sent"
        case .bytesReceived: "bytes_received"
        case .unparsedMessages: "unparsed_messages"
        case .heartbeatsSent: "heartbeats_sent"
        case .pingsSent: "pings_sent"
        case .pongsReceived: "pongs_received"
        case .streamItems: "stream_items"
        case .streamsCancelled: "streams_cancelled"
        case .clientResults: "client_results"
        case .reconnectAttempts: "reconnect_attempts"
        case .reconnected: "reconnected"
        case .connectedWebSockets: "connected_websockets"
        case .connectedServerSentEvents: "connected_server_sent_events"
        case .connectedLongPolling: "connected_long_polling"
        case .sentWebSockets: "sent_websockets"
        case .sentServerSentEvents: "sent_server_sent_events"
        case .sentLongPolling: "sent_long_polling"
        case .churnLeft: "churn_left"
        case .churnJoined: "churn_joined"
        case .notModified: "not_modified"
        case .changed: "changed"
        case .unprocessed: "unprocessed"
        case .clientsStopped: "clients_stopped"
        case .redirectsFollowed: "redirects_followed"
        case .rateLimitHeadersSeen: "rate_limit_headers_seen"
        case .retryAfterSeen: "retry_after_seen"
        case .tlsHandshakes: "tls_handshakes"
        case .tlsResumed: "tls_resumed"
        case .unrecognisedFrames: "unrecognised_frames"
        case .flowIgnored: "flow_ignored"
        case .flowResponded: "flow_responded"
        case .upgraded: "upgraded"
        case .upgradesFailed: "upgrades_failed"
        case .acksReceived: "acks_received"
        case .rampedUp: "ramped_up"
        case .rampedDown: "ramped_down"
        }
    }
}

/// Why a message was counted lost.
public enum LossReason: Int, CaseIterable, Sendable, Codable {
    /// The connection ended before the echo came back.
    case connectionClosed
    /// The echo did not come back before the end of the drain period.
    case timedOut
    /// The run was interrupted (Ctrl-C / SIGTERM) before the echo came back.
    case interrupted
    /// Due while the client was reconnecting, and dropped (`while_disconnected: drop`), or
    /// queued but never sent because the client did not get a connection back.
    case droppedWhileDisconnected
    /// Sent by a worker process that died or stopped answering before its outcome was reported.
    case workerLost
    /// WebSocket flows: no reply matched the message within the scenario's `reply_timeout`.
    case noReply

    public var key: String {
        switch self {
        case .connectionClosed: "connection_closed"
        case .timedOut: "timed_out"
        case .interrupted: "interrupted"
        case .droppedWhileDisconnected: "dropped_while_disconnected"
        case .workerLost: "worker_lost"
        case .noReply: "no_reply"
        }
    }
}

/// Error classes, counted per class. A misbehaving server is counted here, never a crash.
public enum ErrorClass: Int, CaseIterable, Sendable, Codable {
    case connectRefused
    case connectTimeout
    /// Any other connect() failure (EADDRNOTAVAIL, ENETUNREACH, EMFILE …).
    case connectError
    /// The upgrade got an HTTP status other than 101 (statuses counted separately).
    case upgradeRejected
    /// 101 with a wrong Sec-WebSocket-Accept, a missing header, or an unparseable response.
    case upgradeInvalid
    case upgradeTimeout
    /// A frame the RFC forbids (reserved bits, bad opcode, unmasked-ness, bad close payload …).
    case protocolError
    case invalidUTF8
    case messageTooBig
    /// The peer reset the connection (ECONNRESET, EPIPE).
    case connectionReset
    /// The peer closed TCP without a close handshake.
    case unexpectedEOF
    /// The peer closed with a code other than 1000/1001.
    case closedWithError
    /// Any other read/write error.
    case ioError
    /// Hub clients: negotiate or a transport request answered with an HTTP error status
    /// (statuses counted in `upgradeStatuses`).
    case httpStatus
    /// Negotiate answered with an `error`, an unreadable body, or too many redirects.
    case negotiateFailed
    /// None of the scenario's transports is offered by the server.
    case noTransport
    case handshakeFailed
    case handshakeTimeout
    /// Nothing received for the server timeout (SignalR's 30 s rule).
    case serverTimeout
    /// A Completion with an error (the hub method threw).
    case hubError
    /// A Completion whose result is not the one the scenario expects (`expect`).
    case unexpectedReply
    /// REST clients: no first byte, or no whole response, within the scenario's timeouts.
    case responseTimeout
    /// An attempt (TCP connect, upgrade, negotiate, handshake, join, a REST request in flight)
    /// cut off by the end of the run or an interrupt: nothing failed, the run stopped waiting.
    case interrupted
    /// TLS: the server refused the handshake (an alert: no shared version or cipher, our client
    /// certificate refused), or reset or closed the connection during it.
    case tlsHandshakeFailed
    /// TLS: the server's certificate did not verify (unknown CA, expired, wrong host name); the
    /// run's `tls` section has OpenSSL's reasons.
    case tlsVerifyFailed
    /// TLS: the server does not speak TLS (a plain HTTP or WebSocket server on a TLS port).
    case tlsProtocolError
    /// WebSocket flows: a connect step's `expect` saw no matching frame within its timeout, or
    /// (`strict: true`) another frame came first. The step is named in `MetricsShard.stepErrors`.
    case expectTimeout
    case expectMismatch
    /// Socket.IO: the server refused the namespace (CONNECT_ERROR); its message is counted in
    /// `MetricsShard.connectErrorMessages`. (`connect_error` is a TCP connect() failure.)
    case namespaceRefused
    /// Hub clients: negotiate redirected to a host the scenario does not allow (the target's
    /// host, loopback and `hub.redirect_hosts`); the host is named in `hub_errors`.
    case redirectRefused

    public var key: String {
        switch self {
        case .connectRefused: "connect_refused"
        case .connectTimeout: "connect_timeout"
        case .connectError: "connect_error"
        case .upgradeRejected: "upgrade_rejected"
        case .upgradeInvalid: "upgrade_invalid"
        case .upgradeTimeout: "upgrade_timeout"
        case .protocolError: "protocol_error"
        case .invalidUTF8: "invalid_utf8"
        case .messageTooBig: "message_too_big"
        case .connectionReset: "connection_reset"
        case .unexpectedEOF: "unexpected_eof"
        case .closedWithError: "closed_with_error"
        case .ioError: "io_error"
        case .httpStatus: "http_status"
        case .negotiateFailed: "negotiate_failed"
        case .noTransport: "no_transport"
        case .handshakeFailed: "handshake_failed"
        case .handshakeTimeout: "handshake_timeout"
        case .serverTimeout: "server_timeout"
        case .hubError: "hub_error"
        case .unexpectedReply: "unexpected_reply"
        case .responseTimeout: "response_timeout"
        case .interrupted: "interrupted"
        case .tlsHandshakeFailed: "tls_handshake_failed"
        case .tlsVerifyFailed: "tls_verify_failed"
        case .tlsProtocolError: "tls_protocol_error"
        case .expectTimeout: "expect_timeout"
        case .expectMismatch: "expect_mismatch"
        case .namespaceRefused: "namespace_refused"
        case .redirectRefused: "redirect_refused"
        }
    }
}

/// Microsecond histogram: 1 µs to 1 hour, 3 significant digits.
public typealias LatencyHistogram = Histogram<UInt64>

/// An empty latency histogram. It shares one empty bucket array with every other empty one
/// until it records, so it costs nothing to make; its first record copies that array (184 KiB,
/// a plain memory copy).
public func makeLatencyHistogram() -> LatencyHistogram { emptyLatencyHistogram }

/// Empties `histogram`. One that holds samples is swapped for an empty one rather than zeroed
/// in place: the package's `reset()` is not inlinable, so it zeroes the 23,552 buckets through
/// generic value witnesses (about a millisecond each, for every metric every second), while the
/// swap costs nothing and the next record copies the shared empty buckets at memory speed.
@inline(__always) public func clearLatencyHistogram(_ histogram: inout LatencyHistogram) {
    if histogram.totalCount > 0 { histogram = emptyLatencyHistogram }
}

/// The one empty histogram every other starts as (1 µs to 1 hour, 3 significant digits).
private let emptyLatencyHistogram: LatencyHistogram = {
    var h = LatencyHistogram(lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
    h.autoResize = false
    return h
}()

/// One event loop's measurements. Owned and mutated by that loop's thread only (no locks);
/// copied out at interval boundaries and merged by the engine.
public struct MetricsShard: Sendable {
    public var counters: [UInt64]
    public var lost: [UInt64]
    public var errors: [UInt64]
    /// HTTP statuses of rejected upgrades (rare path: a dictionary is fine here).
    public var upgradeStatuses: [Int: UInt64]
    /// Hub errors (Completion error texts) by message; at most `maxDistinctHubErrors` texts, the
    /// rest counted under "(other)". Rare path: a dictionary is fine here.
    public var hubErrorMessages: [String: UInt64]
    public var histograms: [LatencyHistogram]
    /// REST clients: answers by HTTP status (a handful of keys: no allocation once seen).
    public var responseStatuses: [Int: UInt64] = [:]
    /// REST clients: the lowest `X-RateLimit-Remaining` and the longest `Retry-After` (seconds)
    /// seen; `.max` / 0 when none.
    public var rateLimitRemainingMin: UInt64 = .max
    public var retryAfterMaxSeconds: UInt64 = 0
    /// WebSocket clients: Closes the server started, by "code reason" ("4401 auth first"; "no
    /// code" for an empty Close); bounded as hub errors are (`countClose`). Rare path.
    public var closeCodes: [String: UInt64] = [:]
    /// Latencies and counters a scenario names (a WebSocket flow's replies and rules).
    public var named = NamedMetrics()
    /// WebSocket flows: up to `maxSamples` frames no rule recognised, as text (`keepSample`).
    public var samples: [String] = []
    /// WebSocket flows: connect-step failures by step ("expect_timeout: connect step 2
    /// ($.op = auth_ok)"); bounded as hub errors are. Rare path.
    public var stepErrors: [String: UInt64] = [:]
    /// Socket.IO clients: CONNECT_ERROR messages by text ("not authorized"); bounded as hub
    /// errors are (`countConnectError`). Rare path.
    public var connectErrorMessages: [String: UInt64] = [:]
    public static let maxDistinctHubErrors = 100

    public init() {
        counters = Array(repeating: 0, count: Counter.allCases.count)
        lost = Array(repeating: 0, count: LossReason.allCases.count)
        errors = Array(repeating: 0, count: ErrorClass.allCases.count)
        upgradeStatuses = [:]
        hubErrorMessages = [:]
        histograms = LatencyMetric.allCases.map { _ in makeLatencyHistogram() }
    }

    @inline(__always) public mutating func count(_ c: Counter, _ n: UInt64 = 1) { counters[c.rawValue] &+= n }
    @inline(__always) public mutating func lose(_ reason: LossReason, _ n: UInt64 = 1) {
        lost[reason.rawValue] &+= n
        counters[Counter.messagesLost.rawValue] &+= n
    }
    @inline(__always) public mutating func error(_ e: ErrorClass) { errors[e.rawValue] &+= 1 }

    /// Longest hub error text kept, in UTF-8 bytes; longer ones are cut and end in "…".
    public static let maxHubErrorBytes = 240

    /// Counts a hub error text (keeps at most `maxDistinctHubErrors` distinct texts, each at most
    /// `maxHubErrorBytes`): a server cannot grow the results without bound.
    public mutating func countHubError(_ text: String, _ n: UInt64 = 1) {
        Self.countBounded(&hubErrorMessages, Self.cut(text, to: Self.maxHubErrorBytes), n)
    }
    @inline(__always) public subscript(_ c: Counter) -> UInt64 { counters[c.rawValue] }
    @inline(__always) public func errorCount(_ e: ErrorClass) -> UInt64 { errors[e.rawValue] }
    @inline(__always) public func lostCount(_ r: LossReason) -> UInt64 { lost[r.rawValue] }

    /// Records a latency in nanoseconds, stored as microseconds (at least 1).
    @inline(__always) public mutating func record(_ m: LatencyMetric, nanoseconds: UInt64) {
        let us = max(1, min(nanoseconds / 1000, 3_600_000_000))
        _ = histograms[m.rawValue].record(us)
    }

    /// Adds another shard into this one (exact for histograms: merge, never average percentiles).
    public mutating func add(_ other: MetricsShard) {
        for i in counters.indices { counters[i] &+= other.counters[i] }
        for i in lost.indices { lost[i] &+= other.lost[i] }
        for i in errors.indices { errors[i] &+= other.errors[i] }
        for (k, v) in other.upgradeStatuses { upgradeStatuses[k, default: 0] &+= v }
        for (k, v) in other.hubErrorMessages { countHubError(k, v) }
        for (k, v) in other.closeCodes { countCloseKey(k, v) }
        for (k, v) in other.connectErrorMessages { countConnectError(k, v) }
        for (k, v) in other.stepErrors { countStepError(k, v) }
        for text in other.samples where samples.count < Self.maxSamples { samples.append(text) }
        named.add(other.named)
        for (k, v) in other.responseStatuses { responseStatuses[k, default: 0] &+= v }
        rateLimitRemainingMin = min(rateLimitRemainingMin, other.rateLimitRemainingMin)
        retryAfterMaxSeconds = max(retryAfterMaxSeconds, other.retryAfterMaxSeconds)
        for i in histograms.indices where other.histograms[i].totalCount > 0 { histograms[i].add(other.histograms[i]) }
    }

    /// Clears everything. Dictionaries keep their storage; histograms become the shared empty one
    /// (`clearLatencyHistogram`).
    public mutating func reset() {
        for i in counters.indices { counters[i] = 0 }
        for i in lost.indices { lost[i] = 0 }
        for i in errors.indices { errors[i] = 0 }
        upgradeStatuses.removeAll(keepingCapacity: true)
        hubErrorMessages.removeAll(keepingCapacity: true)
        closeCodes.removeAll(keepingCapacity: true)
        connectErrorMessages.removeAll(keepingCapacity: true)
        stepErrors.removeAll(keepingCapacity: true)
        samples.removeAll(keepingCapacity: true)
        named.reset()
        responseStatuses.removeAll(keepingCapacity: true)
        rateLimitRemainingMin = .max
        retryAfterMaxSeconds = 0
        for i in histograms.indices { clearLatencyHistogram(&histograms[i]) }
    }
}

/// Gauges sampled at an interval boundary (not summed over time).
public struct LoopGauges: Sendable, Equatable {
    /// Connections open (upgraded) right now.
    public var openConnections: Int = 0
    /// Largest lateness of a timer against its deadline in the interval, nanoseconds.
    public var maxTimerLagNs: UInt64 = 0
    /// Bytes waiting in write queues.
    public var queuedBytes: Int = 0
    /// CPU time the loop thread used in the interval.
    public var cpuNs: UInt64 = 0
    public init() {}
    public mutating func add(_ o: LoopGauges) {
        openConnections += o.openConnections
        maxTimerLagNs = max(maxTimerLagNs, o.maxTimerLagNs)
        queuedBytes += o.queuedBytes
        cpuNs += o.cpuNs
    }
}
