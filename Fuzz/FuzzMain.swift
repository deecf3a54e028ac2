// libFuzzer entry point for the StampedeWire codecs. `Fuzz/build.sh` compiles this folder
// together with Sources/StampedeWire into ONE binary (one module, so internal symbols are
// reachable without @testable), then adds one symlink per target; the target is chosen by the
// name the binary is run under (`fuzz-websocket`, ...) or by STAMPEDE_FUZZ_TARGET, which wins.
//
// Every target feeds its input twice: whole, and in pieces whose sizes come from a generator
// seeded with a hash of the input, the way a connection delivers it (pending bytes kept,
// consumed bytes dropped). Besides "no crash" (bounds, overflow, ASan), each checks that the
// reported ranges lie in the buffer, `consumed` never exceeds what was given, and that the two
// deliveries produce the same events.

#if canImport(Glibc)
import Glibc
#endif

enum FuzzTarget: String, CaseIterable {
    case websocket
    case jsonHub = "json-hub"
    case msgpackHub = "msgpack-hub"
    case sse
    case httpResponse = "http-response"
    case httpRequest = "http-request"
    case httpExchange = "http-exchange"
    case hubSession = "hub-session"
    case webSocketSession = "websocket-session"
    case flow
    case flowSession = "flow-session"
    case socketIOServer = "socketio-server"
    case socketIOSession = "socketio-session"

    func run(_ data: UnsafeRawBufferPointer) {
        switch self {
        case .websocket: fuzzWebSocket(data)
        case .jsonHub: fuzzJSONHub(data)
        case .msgpackHub: fuzzMessagePackHub(data)
        case .sse: fuzzSSE(data)
        case .httpResponse: fuzzHTTPResponse(data)
        case .httpRequest: fuzzHTTPRequest(data)
        case .httpExchange: fuzzHTTPExchange(data)
        case .hubSession: fuzzHubSession(data)
        case .webSocketSession: fuzzWebSocketSession(data)
        case .flow: fuzzFlow(data)
        case .flowSession: fuzzFlowSession(data)
        case .socketIOServer: fuzzSocketIOServer(data)
        case .socketIOSession: fuzzSocketIOSession(data)
        }
    }
}

nonisolated(unsafe) var selectedTarget: FuzzTarget? = nil

func selectTarget(argv0: String?) -> FuzzTarget? {
    if let env = getenv("STAMPEDE_FUZZ_TARGET") {
        return FuzzTarget(rawValue: String(cString: env))
    }
    guard let argv0 else { return nil }
    let name = argv0.split(separator: "/").last.map(String.init) ?? argv0
    guard name.hasPrefix("fuzz-") else { return nil }
    return FuzzTarget(rawValue: String(name.dropFirst(5)))
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>,
                           _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    let argv0 = argv.pointee?.pointee.map { String(cString: $0) }
    guard let target = selectTarget(argv0: argv0) else {
        let names = FuzzTarget.allCases.map { "fuzz-" + $0.rawValue }.joined(separator: ", ")
        print("stampede-fuzz: no target; run it as one of \(names), or set STAMPEDE_FUZZ_TARGET")
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    selectedTarget!.run(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

// MARK: - Shared helpers

/// Fails the run (a trap, which libFuzzer reports as a crash and saves the input).
@inline(__always)
func check(_ condition: @autoclosure () -> Bool, _ message: StaticString, file: StaticString = #file, line: UInt = #line) {
    if !condition() { fatalError("invariant: \(message)", file: file, line: line) }
}

@inline(__always)
func checkRange(_ r: Range<Int>, within bounds: Range<Int>, _ message: StaticString, line: UInt = #line) {
    check(r.lowerBound >= bounds.lowerBound && r.upperBound <= bounds.upperBound, message, line: line)
}

/// SplitMix64 seeded with FNV-1a of the input (plus a salt), for piece sizes and settings that
/// are a pure function of the input, so a saved crash input replays exactly.
struct InputRandom {
    var state: UInt64

    init(_ data: UnsafeRawBufferPointer, salt: UInt64 = 0) {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ salt
        for b in data { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01B3 }
        state = h
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Mostly small pieces (split headers, lengths, CRLFs), sometimes medium, sometimes the rest.
    mutating func pieceSize(remaining: Int) -> Int {
        let r = next()
        let v = Int(truncatingIfNeeded: r >> 8 & 0xFFFF)
        let size: Int
        switch r & 7 {
        case 0, 1, 2, 3: size = 1 + v % 4
        case 4, 5: size = 1 + v % 32
        case 6: size = 1 + v % 512
        default: size = remaining
        }
        return min(max(size, 1), remaining)
    }
}

/// What a parser step asks of the driver.
struct StepResult {
    /// Bytes to drop from the front of the pending buffer.
    var consumed: Int
    /// Nothing more can be parsed from the pending bytes: append the next piece.
    var needsInput = false
    /// The stream failed: stop feeding.
    var stop = false
}

/// Feeds `input` to `step` as a connection would: pieces are appended to a pending buffer,
/// `step` runs until it needs input, consumed bytes are dropped. `random == nil` delivers the
/// whole input at once. Returns whether the stream stopped on a failure.
@discardableResult
func drive(_ input: UnsafeRawBufferPointer, random: inout InputRandom?, _ step: (UnsafeMutableRawBufferPointer) -> StepResult) -> Bool {
    var pending: [UInt8] = []
    pending.reserveCapacity(input.count)
    var offset = 0
    // Every step either consumes, asks for input, or stops, except a few zero-length events
    // (an empty body's end); more steps than this means a parser that spins without progress.
    var budget = 4 * input.count + 64
    while true {
        let count = pending.count
        let r = pending.withUnsafeMutableBytes { step($0) }
        check(r.consumed >= 0 && r.consumed <= count, "consumed more than given")
        if r.consumed > 0 { pending.removeFirst(r.consumed) }
        if r.stop { return true }
        if r.needsInput {
            if offset == input.count { return false }
            let k = random?.pieceSize(remaining: input.count - offset) ?? (input.count - offset)
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset..<(offset + k)]))
            offset += k
        } else {
            budget -= 1
            check(budget > 0, "parser makes no progress")
        }
    }
}

/// Events of one run, serialized, so a whole-input run and a split run compare with `==`.
struct EventLog: Equatable, CustomStringConvertible {
    var bytes: [UInt8] = []

    mutating func tag(_ t: UInt8) { bytes.append(t) }
    mutating func int(_ v: Int) { withUnsafeBytes(of: Int64(v).littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func uint(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func data(_ b: UnsafeRawBufferPointer) { int(b.count); bytes.append(contentsOf: b) }
    mutating func data(_ buf: UnsafeRawBufferPointer, _ r: Range<Int>) { data(UnsafeRawBufferPointer(rebasing: buf[r])) }
    mutating func data(_ a: [UInt8]) { int(a.count); bytes.append(contentsOf: a) }

    var description: String {
        bytes.prefix(400).map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "\\x" + String($0, radix: 16) }.joined()
    }
}

/// Fails when the two runs differ, printing both.
func checkSame(_ whole: EventLog, _ split: EventLog, _ what: StaticString) {
    if whole != split {
        // To stderr, unbuffered: the trap that follows would lose buffered stdout.
        let text = "whole: \(whole)\nsplit: \(split)\n"
        _ = text.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
        check(false, what)
    }
}
