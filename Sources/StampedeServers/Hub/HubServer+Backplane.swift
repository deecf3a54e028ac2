import StampedeLoop
import StampedeWire

// Hub broadcasts across the server processes of `stampede serve --processes` (see
// ProcessLink.swift): a SendMessage or SendToGroup goes to this process's receivers as before,
// and, as one record, to every other process, which sends it to its own receivers (all of them,
// or its members of the group), so every receiver of every process gets it once.
//
// A record: the wire format of the arguments (0 JSON, 1 MessagePack); 1 and the group name
// (2-byte big-endian length, UTF-8) for SendToGroup, else 0; the user argument's length (4 bytes,
// big-endian); then the user and message arguments exactly as the client encoded them, so the
// receiving process builds ReceiveMessage for each of its receivers' formats as the sender's did.
extension HubServer: SharedBroadcasts {
    /// Hands a broadcast to the other processes, if there are any. Call before the local
    /// broadcast: `group` may point into the `text` scratch that the broadcast reuses.
    func shareBroadcast<P: HubProtocolCodec>(_ p: P.Type, _ buf: UnsafeRawBufferPointer, user: HubTextArgument,
                                             message: HubTextArgument, group: UnsafeRawBufferPointer?) {
        guard let remoteBroadcast else { return }
        guard (group?.count ?? 0) <= 0xFFFF else { return }  // a name that long is no group anyone joined
        var record: [UInt8] = []
        record.reserveCapacity(8 + (group?.count ?? 0) + user.encoded.count + message.encoded.count)
        record.append(P.self == JSONHubProtocol.self ? 0 : 1)
        if let group {
            record += [1, UInt8(group.count >> 8), UInt8(group.count & 255)]
            record += group
        } else {
            record.append(0)
        }
        let n = user.encoded.count
        record += [UInt8(n >> 24), UInt8((n >> 16) & 255), UInt8((n >> 8) & 255), UInt8(n & 255)]
        record += buf[user.encoded]
        record += buf[message.encoded]
        record.withUnsafeBytes { remoteBroadcast($0) }
    }

    public func deliverRemote(records: [UInt8]) {
        records.withUnsafeBytes { all in
            _ = LinkRecord.parse(all) { kind, payload in
                if kind == .broadcast { deliverRemote(payload) }
            }
        }
    }

    /// One record from another process; a malformed one is dropped.
    func deliverRemote(_ r: UnsafeRawBufferPointer) {
        guard r.count >= 6 else { return }
        var o = 2
        var group: UnsafeRawBufferPointer?
        if r[1] == 1 {
            let n = Int(r[2]) << 8 | Int(r[3])
            o = 4 + n
            guard r.count >= o + 4 else { return }
            group = UnsafeRawBufferPointer(rebasing: r[4..<o])
        }
        guard r.count >= o + 4 else { return }
        let n = Int(r[o]) << 24 | Int(r[o + 1]) << 16 | Int(r[o + 2]) << 8 | Int(r[o + 3])
        o += 4
        guard n <= r.count - o else { return }
        func deliver<P: HubProtocolCodec>(_ p: P.Type) {
            guard let user = textArgument(p, r, o..<(o + n)), let message = textArgument(p, r, (o + n)..<r.count) else { return }
            let recipients: [HubConnection]
            if let group {
                guard let g = groups.find(group) else { return }
                recipients = groups.members(of: g)
            } else {
                recipients = members
            }
            statistics.messagesBroadcast += broadcastReceiveMessage(p, r, user: user, message: message, to: recipients)
            statistics.remoteBroadcasts += 1
        }
        if r[0] == 0 { deliver(JSONHubProtocol.self) } else { deliver(MessagePackHubProtocol.self) }
    }
}
