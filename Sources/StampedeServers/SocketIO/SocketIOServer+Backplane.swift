import StampedeLoop

// `said` broadcasts across the server processes of `stampede serve --processes` (see
// ProcessLink.swift): a broadcast goes to this process's members of the room (or namespace) as
// before, and, as one record, to every other process, which sends it to its own members.
//
// A record: the namespace (2-byte big-endian length, bytes); 1 and the room (2-byte length,
// bytes) or 0; the attachment count (1 byte); the Engine.IO text packet (4-byte length, bytes);
// each attachment (4-byte length, bytes). Only WebSocket clients can be spread over processes
// (polling needs sticky sessions), but the record does not care.
enum SocketIOBackplane {
    static func record(namespace: [UInt8], room: UnsafeRawBufferPointer?, text: UnsafeRawBufferPointer, attachments: [[UInt8]],
                       into out: inout [UInt8]) {
        func u16(_ n: Int) { out += [UInt8((n >> 8) & 255), UInt8(n & 255)] }
        func u32(_ n: Int) { out += [UInt8((n >> 24) & 255), UInt8((n >> 16) & 255), UInt8((n >> 8) & 255), UInt8(n & 255)] }
        u16(namespace.count)
        out += namespace
        if let room {
            out.append(1)
            u16(room.count)
            out += room
        } else {
            out.append(0)
        }
        out.append(UInt8(attachments.count))
        u32(text.count)
        out += text
        for a in attachments {
            u32(a.count)
            out += a
        }
    }

    /// The parts of a record; nil when it is malformed.
    static func parse(_ r: UnsafeRawBufferPointer) -> (namespace: [UInt8], room: UnsafeRawBufferPointer?, text: UnsafeRawBufferPointer, attachments: [[UInt8]])? {
        var o = 0
        func take(_ n: Int) -> UnsafeRawBufferPointer? {
            guard n >= 0, n <= r.count - o else { return nil }
            defer { o += n }
            return UnsafeRawBufferPointer(rebasing: r[o..<(o + n)])
        }
        func u16() -> Int? { take(2).map { Int($0[0]) << 8 | Int($0[1]) } }
        func u32() -> Int? { take(4).map { Int($0[0]) << 24 | Int($0[1]) << 16 | Int($0[2]) << 8 | Int($0[3]) } }
        guard let nl = u16(), let namespace = take(nl), let flag = take(1) else { return nil }
        var room: UnsafeRawBufferPointer?
        if flag[0] == 1 {
            guard let rl = u16(), let rb = take(rl) else { return nil }
            room = rb
        }
        guard let count = take(1), let tl = u32(), let text = take(tl) else { return nil }
        var attachments: [[UInt8]] = []
        for _ in 0..<Int(count[0]) {
            guard let al = u32(), let a = take(al) else { return nil }
            attachments.append(Array(a))
        }
        return (Array(namespace), room, text, attachments)
    }
}

extension SocketIOServer: SharedBroadcasts {
    public func deliverRemote(records: [UInt8]) {
        records.withUnsafeBytes { all in
            _ = LinkRecord.parse(all) { kind, payload in
                guard kind == .broadcast, let r = SocketIOBackplane.parse(payload) else { return }
                let key = r.room.map { SocketIORooms.roomKey(r.namespace, $0) } ?? SocketIORooms.namespaceKey(r.namespace)
                deliverBroadcast(key, text: r.text, attachments: r.attachments)
                statistics.remoteBroadcasts += 1
            }
        }
    }
}
