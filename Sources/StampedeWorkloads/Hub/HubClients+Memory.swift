// What a hub client holds in memory, for tests and figures (Benchmarks/memory-per-connection.sh).
// A client carries only the state of its transport and protocol: HTTP state while negotiating
// or on SSE and long polling (`HubHTTPState`), the upgrade's scratch until the WebSocket opens,
// inbound bytes only while a message is incomplete, the user name only once an argument uses it.

import StampedeLoop
import StampedeSession
import StampedeWire

/// How many of a loop's hub clients hold each kind of storage allocated on use.
public struct HubClientsMemory: Sendable, Equatable {
    /// Clients with HTTP state (negotiate's exchange, SSE or long polling).
    public var holdingHTTP = 0
    /// Clients with WebSocket upgrade scratch (request, key, path).
    public var holdingUpgradeScratch = 0
    /// Clients with inbound bytes (a hub message received in part), or their storage.
    public var holdingInbound = 0
    /// Clients with messages kept for a stateful-reconnect replay.
    public var holdingReplay = 0
    /// Clients with a user name rendered.
    public var holdingUserName = 0
    /// Write and input queues the loop's connections hold (`EventLoop.heldBufferCount`).
    public var loopBuffers = 0

    /// Nothing held.
    public init() {}
}

extension HubClients {
    /// Bytes of the fixed records kept per client whether or not it connects (its `HubClient`,
    /// its protocol session, its user-name slot).
    public static var recordBytesPerClient: Int {
        MemoryLayout<HubClient>.stride + MemoryLayout<HubProtocolSession<Codec>>.stride + MemoryLayout<[UInt8]>.stride
    }

    /// What the clients hold now (call on the loop's thread).
    public var memory: HubClientsMemory {
        var m = HubClientsMemory()
        for k in clients.indices {
            if clients[k].connections.http != nil { m.holdingHTTP += 1 }
            if clients[k].connections.webSocket.holdsUpgradeScratch { m.holdingUpgradeScratch += 1 }
            if clients[k].connections.inbound.capacity > 0 { m.holdingInbound += 1 }
            if sessions[k].replayCount > 0 { m.holdingReplay += 1 }
            if !userNames[k].isEmpty { m.holdingUserName += 1 }
        }
        m.loopBuffers = loop.heldBufferCount
        return m
    }
}

/// Hub clients speaking the JSON hub protocol (for callers that do not import the codecs).
public typealias JSONHubClients = HubClients<JSONHubProtocol>
