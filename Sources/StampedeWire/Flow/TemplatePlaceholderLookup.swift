extension MessageTemplate {
    /// The placeholder whose rendered bytes are exactly what `selector` selects in this
    /// template's message, or nil (the selector lands on a literal, on part of a placeholder,
    /// on more than one piece, or on nothing). The loader uses it to check `correlate.sent`:
    /// it must land on `{sequence}` (or `{sequence:u16|u32}`), whose value is unique per send.
    ///
    /// Works by rendering once with sample values while noting where each piece went, then
    /// running the selector over the result; validation-time only (it allocates).
    public func placeholder(at selector: FieldSelector) -> Placeholder? {
        // Sample values: numbers with several digits so a path lands on a whole token, names
        // as digits so a name placed outside quotes still reads as JSON.
        var maxSlot = -1
        for op in ops { if case .named(let slot) = op { maxSlot = max(maxSlot, slot) } }
        let sampleNames: [[UInt8]] = (0...max(maxSlot, 0)).map { Array("9\($0)71".utf8) }
        let user: [UInt8] = Array("user7".utf8)
        let stamp = MessageStamp(sender: 4711, sequence: 4242, intendedNs: 1_000_000, actualNs: 1_000_500)
        return user.withUnsafeBytes { userBytes in
            withBuffers(sampleNames) { named in
                var values = TemplateValues(stamp: stamp, client: 4711, sequence: 4242, user: userBytes, named: named, random: 1)
                var out = [UInt8](repeating: 0, count: length(values))
                var pieces: [Range<Int>] = []
                out.withUnsafeMutableBytes { buf in
                    literalBytes.withUnsafeBytes { literals in
                        var p = 0
                        for op in ops {
                            let n = buf.baseAddress.map { Self.write(op, $0 + p, literals, &values) } ?? 0
                            pieces.append(p..<(p + n))
                            p += n
                        }
                    }
                }
                guard let r = out.withUnsafeBytes({ selector.extract($0) }), !r.isEmpty,
                      let k = pieces.firstIndex(of: r), case .placeholder(let p) = segments[k] else { return nil }
                return p
            }
        }
    }
}

/// Calls `body` with a table of pointers to each of `arrays`' bytes (valid only inside `body`).
private func withBuffers<R>(_ arrays: [[UInt8]], _ body: (UnsafeBufferPointer<UnsafeRawBufferPointer>) -> R) -> R {
    var table: [UnsafeRawBufferPointer] = []
    func nest(_ k: Int) -> R {
        guard k < arrays.count else { return table.withUnsafeBufferPointer(body) }
        return arrays[k].withUnsafeBytes { b in
            table.append(b)
            return nest(k + 1)
        }
    }
    return nest(0)
}
