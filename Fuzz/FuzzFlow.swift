// Target `flow`: the pure pieces of declared WebSocket flows (StampedeWire/Flow). The input is
// one received frame: fixed compiled paths, selectors and matches run over it, and a stamp is
// searched for; the input is also compiled as a path, a text template and a hex template, and
// whatever compiles renders exactly `length` bytes. Checks: ranges lie in the frame, a path on
// a valid object agrees with the strict object scanner, a found stamp re-renders and is found
// again.

private let flowPaths: [JSONPath] = ["$", "$.op", "$.id", "$.data.stamp", "$[0]", "$[4].body.stamp", "$['a b']", "$.payload.data[1]"]
    .map { try! JSONPath(parsing: $0) }
private let flowSelectors: [FieldSelector] = flowPaths.map { .path($0) } + [
    .between(start: Array("receipt-id:".utf8), end: Array("\n".utf8)),
    .between(start: [], end: Array("\n".utf8)),
    .between(start: Array("~".utf8), end: []),
    .bytes(offset: 2, length: 2),
    .bytes(offset: 0, length: 28),
]
private let flowMatches: [FrameMatch] = [
    FrameMatch([.equals(.path(flowPaths[1]), Array("ack".utf8)), .opcode(isText: true)]),
    FrameMatch([.equals(.path(flowPaths[2]), Array("42".utf8))]),
    FrameMatch([.prefix(Array("MESSAGE\n".utf8)), .contains(Array("~st~".utf8))]),
    FrameMatch([.equals(.between(start: Array("receipt-id:".utf8), end: Array("\n".utf8)), Array("7".utf8))]),
    FrameMatch([.masked(offset: 0, bytes: [0x30], mask: [0xF0]), .masked(offset: 1, bytes: [0x02, 0x00], mask: [])]),
]
private let flowTemplates: [MessageTemplate] = [
    try! MessageTemplate(text: #"{"op":"publish","id":{sequence},"tok":"{token}","data":{"stamp":"{stamp}"},"u":"{uuid}","r":"{random_hex:7}"}"#),
    try! MessageTemplate(binaryHex: "32 2a 0005 746f706963 {sequence:u16} {client:u32} {stamp} {random:3}"),
]

func fuzzFlow(_ data: UnsafeRawBufferPointer) {
    let bounds = 0..<data.count
    for selector in flowSelectors {
        if let r = selector.extract(data) { checkRange(r, within: bounds, "flow: selector range outside the frame") }
    }
    for (k, m) in flowMatches.enumerated() {
        let text = m.holds(data, isText: true), binary = m.holds(data, isText: false)
        // Only the first match looks at the opcode.
        check(k == 0 ? !binary : text == binary, "flow: opcode changed a match that ignores it")
    }
    checkTopLevelMember(data)

    if let s = FlowStamp.search(data) {
        // A found stamp, written again, is found again (text or binary alike).
        var out = [UInt8](repeating: 0, count: FlowStamp.maxTextLength + FlowStamp.binaryLength)
        out.withUnsafeMutableBytes { buf in
            let n = FlowStamp.writeText(s, into: buf.baseAddress!)
            check(n == FlowStamp.textLength(s) && n <= FlowStamp.maxTextLength, "flow: text stamp length")
            check(FlowStamp.parse(UnsafeRawBufferPointer(rebasing: buf[0..<n])) == s, "flow: text stamp does not round-trip")
            FlowStamp.writeBinary(s, into: buf.baseAddress! + n)
            check(FlowStamp.search(UnsafeRawBufferPointer(rebasing: buf[n...])) == s, "flow: binary stamp does not round-trip")
        }
    }

    // The frame's bytes as a path and as templates: errors are fine, traps are not.
    let text = String(decoding: data, as: UTF8.self)
    if let p = try? JSONPath(parsing: text), let r = p.value(in: data) { checkRange(r, within: bounds, "flow: own path range") }
    var named = flowTemplates[0]
    _ = try? named.bindNames(toSlots: ["x", "token"])
    var templates = [named, flowTemplates[1]]
    do { templates.append(try MessageTemplate(text: text)) } catch { check(error.column >= 1, "flow: error column") }
    do { templates.append(try MessageTemplate(binaryHex: text)) } catch { check(error.column >= 1, "flow: error column") }
    var random = InputRandom(data, salt: 9)
    // The fixed templates get a JSON-safe name so their paths still find their fields; the
    // input's own templates get the input as every value.
    let safe: [UInt8] = Array("tok".utf8)
    safe.withUnsafeBytes { renderChecked(templates[0], $0, &random, stampAt: flowPaths[3]) }
    for t in templates.dropFirst() {
        renderChecked(t, data, &random, stampAt: nil)
        for selector in flowSelectors.suffix(3) { _ = t.placeholder(at: selector) }
    }
}

/// Renders `t` with `value` as the user and every named value, other values from the input's
/// generator, and checks the exact length; when `stampAt` is given, the stamp is found there.
private func renderChecked(_ t: MessageTemplate, _ value: UnsafeRawBufferPointer, _ random: inout InputRandom, stampAt: JSONPath?) {
    let stamp = MessageStamp(sender: UInt32(truncatingIfNeeded: random.next()), sequence: UInt32(truncatingIfNeeded: random.next()),
                             intendedNs: random.next(), actualNs: random.next())
    let table = [UnsafeRawBufferPointer](repeating: value, count: t.namedPlaceholders.count + 2)
    table.withUnsafeBufferPointer { named in
        var v = TemplateValues(stamp: stamp, client: Int(truncatingIfNeeded: random.next()), sequence: stamp.sequence,
                               user: value, named: named, random: random.next())
        let n = t.length(v)
        var out = [UInt8](repeating: 0xEE, count: n + 1)
        let written = out.withUnsafeMutableBytes { t.render(into: $0.baseAddress!, &v) }
        check(written == n && out[n] == 0xEE, "flow: render length differs from length()")
        guard let stampAt else { return }
        out.withUnsafeBytes { b in
            let r = stampAt.value(in: UnsafeRawBufferPointer(rebasing: b[0..<n]))
            check(r.flatMap { FlowStamp.parse(UnsafeRawBufferPointer(rebasing: b[$0])) } == stamp, "flow: rendered stamp not found")
        }
    }
}

/// `$.op` on a frame that is exactly one valid object equals the strict scanner's first `op` member.
private func checkTopLevelMember(_ data: UnsafeRawBufferPointer) {
    var expected: Range<Int>? = nil
    let valid = HubJSONScanner.scanObject(data, from: 0, to: data.count) { key, escaped, value, kind in
        if expected == nil && HubJSONScanner.contentsEqual(data, key, hasEscape: escaped, "op") {
            expected = kind == .string ? (value.lowerBound + 1)..<(value.upperBound - 1) : value
        }
        return true
    }
    if valid { check(flowPaths[1].value(in: data) == expected, "flow: $.op differs from the object scanner") }
}
