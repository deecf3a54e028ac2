import Testing
import StampedeTestSupport
import StampedeWire
@testable import StampedeSession

typealias Role = WebSocketReceiver.Role


/// A frame masked for the server role (as a client sends it), or unmasked for the client role.
func frameFor(_ role: Role, fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, payload: [UInt8] = []) -> [UInt8] {
    makeFrame(fin: fin, rsv: rsv, opcode: opcode, payload: payload, mask: role == .server ? [0x37, 0xFA, 0x21, 0x3D] : nil)
}

/// The bytes of a Close body, or nil when no Close is to be sent.
func closeBytes(_ p: WebSocketClosePayload?) -> [UInt8]? { p.map { $0.withUnsafeBytes { Array($0) } } }

/// A session action with its payload bytes copied out, so a run compares with `==`.
enum Did: Equatable, CustomStringConvertible {
    case sendUpgradeRequest(deadline: UInt64)
    case opened
    case message(WebSocketOpcode, [UInt8])
    case sendPong([UInt8])
    case pong([UInt8])
    /// A close step: the Close body sent (nil: none), shutdown/close of TCP, the deadline asked for.
    case closing(send: [UInt8]?, shutdownWrite: Bool, deadline: UInt64?)
    case closeTransport(send: [UInt8]?, end: WebSocketServerSession.End)
    case clientEnded(WebSocketClientSession.End, closeTransport: Bool)
    case serverEnded(WebSocketServerSession.End, closeTransport: Bool)
    case none

    var description: String {
        switch self {
        case .sendUpgradeRequest(let d): "sendUpgradeRequest(\(d))"
        case .opened: "opened"
        case .message(let o, let p): "message(\(o), \(String(decoding: p.prefix(40), as: UTF8.self)))"
        case .sendPong(let p): "sendPong(\(p))"
        case .pong(let p): "pong(\(p))"
        case .closing(let s, let w, let d): "closing(send: \(s.map { "\($0)" } ?? "nil"), shutdownWrite: \(w), deadline: \(d.map(String.init) ?? "nil"))"
        case .closeTransport(let s, let e): "closeTransport(send: \(s.map { "\($0)" } ?? "nil"), end: \(e))"
        case .clientEnded(let e, let c): "ended(\(e), closeTransport: \(c))"
        case .serverEnded(let e, let c): "ended(\(e), closeTransport: \(c))"
        case .none: "none"
        }
    }
}

extension WebSocketClientSession {
    /// Feeds `input` as one read (pending bytes kept as a connection keeps them) and returns
    /// every action until the session needs more. `pending` carries unconsumed bytes between calls.
    mutating func feed(_ input: [UInt8], pending: inout [UInt8], now: UInt64) -> [Did] {
        pending += input
        var out: [Did] = []
        // Each action consumes bytes or ends the connection; a bounded loop all the same.
        for _ in 0..<(pending.count + 8) {
            let (action, consumed, did) = pending.withUnsafeMutableBytes { buffer -> (Action, Int, Did?) in
                let (action, consumed) = next(buffer, now: now)
                return (action, consumed, describe(action, in: UnsafeRawBufferPointer(buffer)))
            }
            #expect(consumed >= 0 && consumed <= pending.count)
            pending.removeFirst(consumed)
            guard let did else { return out }
            out.append(did)
            if case .ended = action { return out }
        }
        Issue.record("session makes no progress")
        return out
    }

    /// Feeds `input` in one piece from an empty buffer.
    mutating func feed(_ input: [UInt8], now: UInt64) -> [Did] {
        var pending: [UInt8] = []
        return feed(input, pending: &pending, now: now)
    }

    /// The action with its bytes copied; nil for `.needMore`.
    func describe(_ action: Action, in buffer: UnsafeRawBufferPointer) -> Did? {
        func bytes(_ r: Range<Int>) -> [UInt8] { Array(buffer[r]) }
        switch action {
        case .needMore: return nil
        case .sendUpgradeRequest(let d): return .sendUpgradeRequest(deadline: d)
        case .opened: return .opened
        case .message(let o, let r): return .message(o, bytes(r))
        case .assembledMessage(let o): return .message(o, assembled)
        case .sendPong(let r): return .sendPong(bytes(r))
        case .pong(let r): return .pong(bytes(r))
        case .closing(let s, let w, let d): return .closing(send: closeBytes(s), shutdownWrite: w, deadline: d)
        case .ended(let e, let c): return .clientEnded(e, closeTransport: c)
        case .none: return Did.none
        }
    }

    /// A command's action, described (commands carry no byte ranges).
    func describe(_ action: Action) -> Did {
        describe(action, in: UnsafeRawBufferPointer(start: nil, count: 0)) ?? Did.none
    }
}

extension WebSocketServerSession {
    /// Like the client's `feed`.
    mutating func feed(_ input: [UInt8], pending: inout [UInt8], now: UInt64) -> [Did] {
        pending += input
        var out: [Did] = []
        for _ in 0..<(pending.count + 8) {
            let (action, consumed, did) = pending.withUnsafeMutableBytes { buffer -> (Action, Int, Did?) in
                let (action, consumed) = next(buffer, now: now)
                return (action, consumed, describe(action, in: UnsafeRawBufferPointer(buffer)))
            }
            #expect(consumed >= 0 && consumed <= pending.count)
            pending.removeFirst(consumed)
            guard let did else { return out }
            out.append(did)
            switch action {
            case .ended, .closeTransport: return out
            default: break
            }
        }
        Issue.record("session makes no progress")
        return out
    }

    mutating func feed(_ input: [UInt8], now: UInt64) -> [Did] {
        var pending: [UInt8] = []
        return feed(input, pending: &pending, now: now)
    }

    func describe(_ action: Action, in buffer: UnsafeRawBufferPointer) -> Did? {
        func bytes(_ r: Range<Int>) -> [UInt8] { Array(buffer[r]) }
        switch action {
        case .needMore: return nil
        case .message(let o, let r): return .message(o, bytes(r))
        case .assembledMessage(let o): return .message(o, assembled)
        case .sendPong(let r): return .sendPong(bytes(r))
        case .pong(let r): return .pong(bytes(r))
        case .closing(let s, let d): return .closing(send: closeBytes(s), shutdownWrite: true, deadline: d)
        case .closeTransport(let s, let e): return .closeTransport(send: closeBytes(s), end: e)
        case .ended(let e, let c): return .serverEnded(e, closeTransport: c)
        case .none: return Did.none
        }
    }

    func describe(_ action: Action) -> Did {
        describe(action, in: UnsafeRawBufferPointer(start: nil, count: 0)) ?? Did.none
    }
}

/// The 101 a server sends for `key` (RFC 6455 §4.2.2), optionally with extra header lines.
func switchingProtocols(key: String, extra: String = "") -> [UInt8] {
    Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(forKey: key))\r\n\(extra)\r\n".utf8)
}

/// The key RFC 6455 §1.3 uses as its example.
let exampleKey = "dGhlIHNhbXBsZSBub25jZQ=="
