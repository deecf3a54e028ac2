import StampedeLoop
import StampedeWire

/// A Counter stream (server-to-client).
struct HubOutStream {
    var generation: UInt32 = 0
    var active = false
    var connection: HubConnection? = nil
    var invocationId: [UInt8] = []
    var next: Int64 = 0
    var count: Int64 = 0
    var delayNs: UInt64 = 0
}

extension HubServer {
    // MARK: Counter streams

    func startCounter(_ c: HubConnection, id: UnsafeRawBufferPointer, count: Int64, delayMs: Int64) {
        let index: Int
        if let free = freeStreams.popLast() {
            index = free
        } else {
            index = streams.count
            streams.append(HubOutStream())
        }
        streams[index].active = true
        streams[index].connection = c
        streams[index].invocationId = Array(id)
        streams[index].next = 0
        streams[index].count = max(0, count)
        streams[index].delayNs = UInt64(max(0, min(delayMs, 86_400_000))) * 1_000_000
        c.streams.append(index)
        streamTick(index, generation: streams[index].generation, deadline: EventLoop.now())
    }

    func freeStream(_ index: Int) {
        guard streams[index].active else { return }
        streams[index].active = false
        streams[index].connection = nil
        streams[index].invocationId = []
        streams[index].generation &+= 1
        freeStreams.append(index)
    }

    func streamTick(_ index: Int, generation: UInt32, deadline: UInt64) {
        guard index < streams.count, streams[index].active, streams[index].generation == generation,
              let c = streams[index].connection, c.isActive else { return }
        var budget = streams[index].delayNs == 0 ? 256 : 1
        while budget > 0 && streams[index].next < streams[index].count {
            let value = streams[index].next
            streams[index].next += 1
            budget -= 1
            let invocationId = streams[index].invocationId
            invocationId.withUnsafeBytes { id in
                let m: UnsafeRawBufferPointer?
                switch c.proto {
                case .json: m = out.write { JSONHubProtocol.writeStreamItem(into: $0, invocationId: .utf8(id)) { $0.int(value) } }
                case .messagePack: m = out.write { MessagePackHubProtocol.writeStreamItem(into: $0, invocationId: .utf8(id)) { $0.int(value) } }
                }
                if let m {
                    statistics.streamItemsSent += 1
                    send(c, m)
                }
            }
        }
        if streams[index].next >= streams[index].count {
            let id = streams[index].invocationId
            finishStream(c, index)
            id.withUnsafeBytes { id in
                switch c.proto {
                case .json: completeVoid(JSONHubProtocol.self, c, id)
                case .messagePack: completeVoid(MessagePackHubProtocol.self, c, id)
                }
            }
            return
        }
        let next = streams[index].delayNs == 0 ? EventLoop.now() : deadline + streams[index].delayNs
        loop.schedule(at: next, token: TimerToken(HubTimer.stream, slot: index, epoch: generation))
    }

    func finishStream(_ c: HubConnection, _ index: Int) {
        if let k = c.streams.firstIndex(of: index) { c.streams.remove(at: k) }
        freeStream(index)
    }

    /// CancelInvocation: stops a Counter; like ASP.NET, a Completion (without error) follows.
    func cancelStream<P: HubProtocolCodec>(_ p: P.Type, _ c: HubConnection, _ buf: UnsafeRawBufferPointer, _ m: HubMessage) {
        guard let idRange = m.invocationId else { return }
        let id = decoded(p, buf, idRange, into: idScratch)
        guard let index = c.streams.first(where: { HubBytes.equals(id, streams[$0].invocationId) }) else { return }
        statistics.streamsCanceled += 1
        finishStream(c, index)
        completeVoid(p, c, id)
    }
}
