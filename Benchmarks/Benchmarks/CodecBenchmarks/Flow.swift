import Benchmark
import StampedeWire

// The declared flow's per-message work (`workload: websocket`, issue 22), one message per
// operation: rendering a send template into a preallocated buffer, and classifying received
// frames (reply rules' `match`, the selected fields, the stamp). Templates, paths and matches are
// compiled once in `setup`, as the scenario loader does; only the per-message calls are timed.

/// The pub/sub publish of scenarios/websocket-pubsub.yaml, with the `{session}` capture of its
/// connect flow added so that a named value is rendered too.
let flowPublishTemplate =
    #"{"op":"publish","channel":"room-{client%10}","id":{sequence},"session":"{session}","data":{"stamp":"{stamp}"}}"#
/// The chat protocol as a flow (scenarios/websocket-chat-flow.yaml; what flow-vs-floor.sh sends).
let flowChatTemplate = #"{"message":"{stamp}","user":"{user}","userID":"{uuid}"}"#
/// The MQTT PUBLISH of scenarios/websocket-mqtt.yaml: QoS 1, packet id, 28-byte binary stamp.
let flowMQTTTemplate = "32 28 0008 7374616d70656465 {sequence:u16} {stamp}"

@inline(__always)
func flowStamp(_ i: Int) -> MessageStamp {
    MessageStamp(sender: UInt32(truncatingIfNeeded: i % 50), sequence: UInt32(truncatingIfNeeded: i),
                 intendedNs: 1_763_779_200_000_000_000 &+ UInt64(truncatingIfNeeded: i) &* 1_000_000,
                 actualNs: 1_763_779_200_000_000_000 &+ UInt64(truncatingIfNeeded: i) &* 1_000_000 &+ 1_234)
}

/// Compiled templates, the values a client keeps (user name, capture table), an output buffer.
final class FlowSendState: @unchecked Sendable {
    let publish: MessageTemplate
    let chat: MessageTemplate
    let mqtt: MessageTemplate
    let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    let session: UnsafeMutableRawBufferPointer
    let user: UnsafeMutableRawBufferPointer
    /// The capture table `TemplateValues.named` points at: slot 0 is `session`.
    let named = UnsafeMutableBufferPointer<UnsafeRawBufferPointer>.allocate(capacity: 1)

    init() {
        var publish = try! MessageTemplate(text: flowPublishTemplate)
        try! publish.bindNames(toSlots: ["session"])
        self.publish = publish
        chat = try! MessageTemplate(text: flowChatTemplate)
        mqtt = try! MessageTemplate(binaryHex: flowMQTTTemplate)
        session = Self.copy("7f3a9c2e-5b1d-4e8a-9f60-2c4b8d1e7a35")
        user = Self.copy("user-17")
        named.initialize(repeating: UnsafeRawBufferPointer(session))
    }

    static func copy(_ s: String) -> UnsafeMutableRawBufferPointer {
        let b = UnsafeMutableRawBufferPointer.allocate(byteCount: s.utf8.count, alignment: 16)
        b.copyBytes(from: s.utf8)
        return b
    }

    deinit { out.deallocate(); session.deallocate(); user.deallocate(); named.deallocate() }
}

/// `length` then `render` per message, as the flow's send does; returns the bytes written.
@inline(__always)
func renderFlowMessage(_ template: MessageTemplate, _ state: FlowSendState, _ i: Int, random: inout UInt64) -> Int {
    var values = TemplateValues(stamp: flowStamp(i), client: i % 50, sequence: UInt32(truncatingIfNeeded: i),
                                user: UnsafeRawBufferPointer(state.user), named: UnsafeBufferPointer(state.named), random: random)
    let n = template.length(values)
    precondition(n <= state.out.count)
    let written = template.render(into: state.out.baseAddress!, &values)
    random = values.random
    return written == n ? n : -1
}

/// Received frames as the pub/sub server sends them, and the reply rules compiled from
/// scenarios/websocket-pubsub.yaml (ack: `{$.op: ack}`, `correlate.received: $.id`; event:
/// `{$.op: event}`, `stamp: $.data.stamp`), plus an MQTT delivery for `stamp: search`.
final class FlowReceiveState: @unchecked Sendable {
    static let frameCount = 64
    /// `frameCount` frames, alternating ack and event, each at `frames[k]`.
    let storage: UnsafeMutableRawBufferPointer
    let frames: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    /// The same events with the stamp found by `FlowStamp.search` (no path): event frames only.
    let events: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    /// MQTT QoS 0 deliveries (`30 26 0008 "stampede" <binary stamp>`).
    let mqttFrames: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>
    let ackMatch: FrameMatch
    let eventMatch: FrameMatch
    let idSelector: FieldSelector
    let stampSelector: FieldSelector
    let mqttMatch: FrameMatch

    init() {
        let op = try! JSONPath(parsing: "$.op")
        ackMatch = FrameMatch([.equals(.path(op), Array("ack".utf8))])
        eventMatch = FrameMatch([.equals(.path(op), Array("event".utf8))])
        idSelector = .path(try! JSONPath(parsing: "$.id"))
        stampSelector = .path(try! JSONPath(parsing: "$.data.stamp"))
        mqttMatch = FrameMatch([.masked(offset: 0, bytes: [0x30], mask: [0xF0])])

        storage = .allocate(byteCount: 1 << 16, alignment: 16)
        frames = .allocate(capacity: Self.frameCount)
        events = .allocate(capacity: Self.frameCount / 2)
        mqttFrames = .allocate(capacity: Self.frameCount)
        var at = 0
        func append(_ bytes: [UInt8]) -> UnsafeRawBufferPointer {
            let b = UnsafeMutableRawBufferPointer(rebasing: storage[at..<(at + bytes.count)])
            b.copyBytes(from: bytes)
            at += bytes.count
            return UnsafeRawBufferPointer(b)
        }
        var stampText = [UInt8](repeating: 0, count: FlowStamp.maxTextLength)
        var stampBinary = [UInt8](repeating: 0, count: FlowStamp.binaryLength)
        for k in 0..<Self.frameCount {
            let s = flowStamp(k * 7919)
            let n = stampText.withUnsafeMutableBytes { FlowStamp.writeText(s, into: $0.baseAddress!) }
            let text = String(decoding: stampText[0..<n], as: UTF8.self)
            if k % 2 == 0 {
                frames[k] = append(Array(#"{"op":"ack","id":\#(k * 7919)}"#.utf8))
            } else {
                let event = Array(#"{"op":"event","channel":"room-\#(k % 10)","from":"user-\#(k % 50)","data":{"stamp":"\#(text)"}}"#.utf8)
                frames[k] = append(event)
                events[k / 2] = frames[k]
            }
            stampBinary.withUnsafeMutableBytes { FlowStamp.writeBinary(s, into: $0.baseAddress!) }
            mqttFrames[k] = append([0x30, 0x26, 0x00, 0x08] + Array("stampede".utf8) + stampBinary)
        }
    }

    deinit { storage.deallocate(); frames.deallocate(); events.deallocate(); mqttFrames.deallocate() }
}

func flowBenchmarks() {
    let configuration = Benchmark.Configuration(metrics: codecMetrics, scalingFactor: scalingFactor, thresholds: noMallocs)

    Benchmark("Flow send: pub-sub publish template (length + render, text)", configuration: configuration) { benchmark, state in
        var random: UInt64 = 1
        var bytes = 0
        for i in benchmark.scaledIterations { bytes &+= renderFlowMessage(state.publish, state, i, random: &random) }
        if bytes <= 0 { benchmark.error("render failed") }
        blackHole(bytes)
    } setup: { FlowSendState() }

    Benchmark("Flow send: chat-flow template (length + render, stamp + user + uuid)", configuration: configuration) { benchmark, state in
        var random: UInt64 = 1
        var bytes = 0
        for i in benchmark.scaledIterations { bytes &+= renderFlowMessage(state.chat, state, i, random: &random) }
        if bytes <= 0 { benchmark.error("render failed") }
        blackHole(bytes)
    } setup: { FlowSendState() }

    Benchmark("Flow send: MQTT PUBLISH template (length + render, binary)", configuration: configuration) { benchmark, state in
        var random: UInt64 = 1
        var bytes = 0
        for i in benchmark.scaledIterations { bytes &+= renderFlowMessage(state.mqtt, state, i, random: &random) }
        if bytes != 42 * benchmark.scaledIterations.count { benchmark.error("render failed: \(bytes) bytes") }
        blackHole(bytes)
    } setup: { FlowSendState() }

    // What the flow does with each received text frame of the pub/sub protocol: the rules in
    // order (ack, then event), then the matched rule's selector, then the stamp.
    Benchmark("Flow receive: pub-sub ack + event (FrameMatch.holds, extract $.id, $.data.stamp, FlowStamp.parse)",
              configuration: configuration) { benchmark, state in
        var acks = 0, stamps = 0
        var k = 0
        for _ in benchmark.scaledIterations {
            let frame = state.frames[k]
            k = k + 1 == FlowReceiveState.frameCount ? 0 : k + 1
            if state.ackMatch.holds(frame, isText: true) {
                if let r = state.idSelector.extract(frame), !r.isEmpty { acks += 1 }
            } else if state.eventMatch.holds(frame, isText: true),
                      let r = state.stampSelector.extract(frame),
                      let s = FlowStamp.parse(UnsafeRawBufferPointer(rebasing: frame[r])) {
                stamps += 1
                blackHole(s.sequence)
            }
        }
        if acks + stamps != benchmark.scaledIterations.count { benchmark.error("frames not classified: \(acks) + \(stamps)") }
        blackHole(acks)
    } setup: { FlowReceiveState() }

    Benchmark("Flow receive: FlowStamp.search in pub-sub event (text stamp)", configuration: configuration) { benchmark, state in
        var found = 0
        var k = 0
        for _ in benchmark.scaledIterations {
            if let s = FlowStamp.search(state.events[k]) { found += 1; blackHole(s.sequence) }
            k = k + 1 == FlowReceiveState.frameCount / 2 ? 0 : k + 1
        }
        if found != benchmark.scaledIterations.count { benchmark.error("stamps missing: \(found)") }
    } setup: { FlowReceiveState() }

    Benchmark("Flow receive: MQTT delivery (masked match + FlowStamp.search, binary stamp)", configuration: configuration) { benchmark, state in
        var found = 0
        var k = 0
        for _ in benchmark.scaledIterations {
            let frame = state.mqttFrames[k]
            k = k + 1 == FlowReceiveState.frameCount ? 0 : k + 1
            if state.mqttMatch.holds(frame, isText: false), let s = FlowStamp.search(frame) { found += 1; blackHole(s.sequence) }
        }
        if found != benchmark.scaledIterations.count { benchmark.error("stamps missing: \(found)") }
    } setup: { FlowReceiveState() }
}
