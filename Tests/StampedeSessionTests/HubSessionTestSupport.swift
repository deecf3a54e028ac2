import StampedeWire
@testable import StampedeSession

/// What a hub session did, with ranges turned into the bytes they name, so a test compares
/// values (and the same log whatever the pieces the input came in).
enum HubLogged: Equatable, CustomStringConvertible {
    case handshake
    case message(type: UInt8, bytes: [UInt8])
    case skipped
    case handshakeRejected(String)
    case handshakeInvalid
    case protocolError(HubProtocolError)
    case sequenceAhead
    case closed(error: String?, allowReconnect: Bool)

    var description: String {
        switch self {
        case .handshake: "handshake"
        case .message(let t, let b): "message(\(t), \(String(decoding: b, as: UTF8.self)))"
        case .skipped: "skipped"
        case .handshakeRejected(let s): "handshakeRejected(\(s))"
        case .handshakeInvalid: "handshakeInvalid"
        case .protocolError(let e): "protocolError(\(e))"
        case .sequenceAhead: "sequenceAhead"
        case .closed(let e, let a): "closed(\(e ?? "nil"), allowReconnect: \(a))"
        }
    }
}

/// A hub session with the receive buffer a runtime keeps for it, and a scratch buffer to
/// write into.
struct HubHarness<Codec: HubProtocolCodec> {
    var session: HubProtocolSession<Codec>
    var pending: [UInt8] = []
    var clock = FakeClock()

    init(maxMessageLength: Int = 1 << 16, keepAliveSeconds: Double = 15, serverTimeoutSeconds: Double = 30, maxReplayBytes: Int = 8 << 20) {
        session = HubProtocolSession(.init(maxMessageLength: maxMessageLength,
                                           keepAliveIntervalNs: UInt64(keepAliveSeconds * 1e9),
                                           serverTimeoutNs: UInt64(serverTimeoutSeconds * 1e9),
                                           maxReplayBytes: maxReplayBytes))
    }

    /// Sends the handshake request and returns its bytes.
    mutating func start(stateful: Bool = false) -> [UInt8] {
        let now = clock.now
        return writtenBytes { out in session.handshakeRequest(statefulReconnect: stateful, now: now, into: out) } ?? []
    }

    /// Feeds received bytes and runs the session until it needs more or ends.
    mutating func receive(_ bytes: [UInt8]) -> [HubLogged] {
        session.dataReceived(now: clock.now)
        pending += bytes
        var log: [HubLogged] = []
        for _ in 0..<10_000 {
            let (action, consumed) = pending.withUnsafeBytes { session.next($0) }
            switch action {
            case .needMore: return log
            case .handshakeCompleted: log.append(.handshake)
            case .skipped: log.append(.skipped)
            case .message(let m): log.append(.message(type: m.type, bytes: Array(pending[0..<consumed])))
            case .ended(let end):
                log.append(Self.logged(end, pending))
                pending = []
                return log
            }
            pending.removeFirst(consumed)
        }
        return log
    }

    static func logged(_ end: HubSessionEnd, _ buffer: [UInt8]) -> HubLogged {
        func text(_ r: Range<Int>) -> String { String(decoding: buffer[r], as: UTF8.self) }
        switch end {
        case .handshakeRejected(let r): return .handshakeRejected(text(r))
        case .handshakeInvalid: return .handshakeInvalid
        case .protocolError(let e): return .protocolError(e)
        case .sequenceAhead: return .sequenceAhead
        case .closedByServer(let e, let allow): return .closed(error: e.map(text), allowReconnect: allow)
        case .serverTimeout: return .closed(error: "server timeout", allowReconnect: false)
        }
    }

    /// Sends a numbered Invocation to `target` with no arguments; returns what the session said
    /// and the bytes it wrote.
    mutating func invoke(_ id: UInt64) -> (HubSendResult, [UInt8]) {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { out.deallocate() }
        let now = clock.now
        let result = session.send(now: now, into: out) { o in
            Codec.writeInvocation(into: o, invocationId: .number(id), target: "Echo", streamIds: nil) { w in w.int(Int64(id)) }
        }
        let n = Codec.writeInvocation(into: out, invocationId: .number(id), target: "Echo", streamIds: nil) { w in w.int(Int64(id)) } ?? 0
        return (result, Array(UnsafeRawBufferPointer(rebasing: out[0..<n])))
    }

    mutating func keepAlive() -> (step: HubKeepAliveStep, ping: [UInt8]?, ack: [UInt8]?) {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { out.deallocate() }
        let step = session.keepAliveCheck(now: clock.now, into: out)
        return (step, step.ping.map { Array(UnsafeRawBufferPointer(rebasing: out[$0])) },
                step.ack.map { Array(UnsafeRawBufferPointer(rebasing: out[$0])) })
    }

    var replayed: [[UInt8]] {
        var all: [[UInt8]] = []
        session.forEachReplayMessage { all.append(Array($0)) }
        return all
    }
}

/// The bytes a session call writes into a scratch buffer, or nil.
func writtenBytes(_ body: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8]? {
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
    defer { out.deallocate() }
    guard let n = body(out) else { return nil }
    return Array(UnsafeRawBufferPointer(rebasing: out[0..<n]))
}

/// Text bytes with a 0x1E after each record given.
func records(_ texts: String...) -> [UInt8] {
    texts.flatMap { Array($0.utf8) + [0x1E] }
}

/// One encoded hub message of each codec, written by the codec's own writers, for fixtures
/// that do not care about the exact bytes.
enum HubFixtures {
    static func ack<C: HubProtocolCodec>(_: C.Type, _ id: UInt64) -> [UInt8] { write { C.writeAck(into: $0, sequenceId: id) } }
    static func sequence<C: HubProtocolCodec>(_: C.Type, _ id: UInt64) -> [UInt8] { write { C.writeSequence(into: $0, sequenceId: id) } }
    static func ping<C: HubProtocolCodec>(_: C.Type) -> [UInt8] { write { C.writePing(into: $0) } }
    static func completion<C: HubProtocolCodec>(_: C.Type, _ id: UInt64) -> [UInt8] {
        write { C.writeCompletion(into: $0, invocationId: .number(id)) }
    }

    static func write(_ body: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
        let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)
        defer { out.deallocate() }
        let n = body(out)!
        return Array(UnsafeRawBufferPointer(rebasing: out[0..<n]))
    }
}
