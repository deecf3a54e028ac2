import Testing
import StampedeTestSupport
@testable import StampedeWire


func hexString(_ b: [UInt8]) -> String { b.map { String($0, radix: 16).leftPadded(2) }.joined() }

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// SplitMix64: a seeded generator so randomised tests are reproducible.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func bytes(_ n: Int) -> [UInt8] { (0..<n).map { _ in UInt8.random(in: 0...255, using: &self) } }
}

/// Packs a 4-byte wire-order masking key the way `WebSocketFrameHeader.maskKey` stores it.
func packKey(_ k: [UInt8]) -> UInt32 {
    UInt32(k[0]) | UInt32(k[1]) << 8 | UInt32(k[2]) << 16 | UInt32(k[3]) << 24
}


/// A frame masked for the server role, or unmasked for the client role.
func frameFor(_ role: WebSocketReceiver.Role, fin: Bool = true, rsv: UInt8 = 0, opcode: UInt8, payload: [UInt8] = []) -> [UInt8] {
    makeFrame(fin: fin, rsv: rsv, opcode: opcode, payload: payload, mask: role == .server ? [0x37, 0xFA, 0x21, 0x3D] : nil)
}

func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] { [UInt8(code >> 8), UInt8(code & 0xFF)] + reason }

/// A receiver event with its payload copied out, so a run over a whole buffer can be compared at once.
enum Got: Equatable, CustomStringConvertible {
    case needMore
    case message(WebSocketOpcode, [UInt8])
    case assembled(WebSocketOpcode, [UInt8])
    case fragment
    case ping([UInt8])
    case pong([UInt8])
    case close(UInt16?, [UInt8])
    case protocolError
    case invalidUTF8
    case messageTooBig

    var description: String {
        switch self {
        case .needMore: "needMore"
        case .message(let o, let p): "message(\(o), \(hexString(p).prefix(40)))"
        case .assembled(let o, let p): "assembled(\(o), \(hexString(p).prefix(40)))"
        case .fragment: "fragment"
        case .ping(let p): "ping(\(hexString(p)))"
        case .pong(let p): "pong(\(hexString(p)))"
        case .close(let c, let r): "close(\(c.map(String.init) ?? "nil"), \(hexString(r)))"
        case .protocolError: "protocolError"
        case .invalidUTF8: "invalidUTF8"
        case .messageTooBig: "messageTooBig"
        }
    }
}

extension WebSocketReceiver {
    /// Feeds `input` (copied; payloads are unmasked in the copy) frame by frame until it needs
    /// more bytes or fails, checking that every consumed count is a whole frame of the input.
    mutating func run(_ input: [UInt8]) -> [Got] {
        var buffer = input
        var offset = 0
        var out: [Got] = []
        // Each iteration consumes at least 2 bytes or stops, so this is bounded by the input size.
        while true {
            let (event, consumed) = buffer.withUnsafeMutableBytes { all in
                next(UnsafeMutableRawBufferPointer(rebasing: all[offset...]))
            }
            let base = offset
            func slice(_ r: Range<Int>) -> [UInt8] { Array(buffer[(base + r.lowerBound)..<(base + r.upperBound)]) }
            let got: Got
            switch event {
            case .needMore: got = .needMore
            case .message(let op, let r): got = .message(op, slice(r))
            case .assembledMessage(let op): got = .assembled(op, assembled)
            case .fragment: got = .fragment
            case .ping(let r): got = .ping(slice(r))
            case .pong(let r): got = .pong(slice(r))
            case .close(let code, let r): got = .close(code, slice(r))
            case .fail(.protocolError): got = .protocolError
            case .fail(.invalidUTF8): got = .invalidUTF8
            case .fail(.messageTooBig): got = .messageTooBig
            }
            out.append(got)
            switch event {
            case .needMore:
                #expect(consumed == 0, "no bytes may be consumed without a complete frame")
                return out
            case .fail:
                // The connection is failed; what `consumed` says then is not part of the contract.
                return out
            default:
                #expect(consumed >= 2 && offset + consumed <= buffer.count)
                offset += consumed
            }
        }
    }
}

/// Runs one fresh receiver over `input`.
func receive(_ input: [UInt8], role: WebSocketReceiver.Role, maxMessageBytes: Int = 1 << 20) -> [Got] {
    var r = WebSocketReceiver(role: role, maxMessageBytes: maxMessageBytes)
    return r.run(input)
}

let helloBytes: [UInt8] = Array("Hello".utf8)
