// What a Socket.IO client holds in memory, for tests and figures: long polling's state only while
// it polls (`SocketIOHTTPState`: gone after the upgrade), the WebSocket's upgrade scratch only
// until the 101, a binary packet's storage only while its attachments arrive, the emits awaited
// only while some are, the user name only once a template uses it.

import StampedeLoop
import StampedeSession

/// How many of a loop's Socket.IO clients hold each kind of storage allocated on use.
public struct SocketIOClientsMemory: Sendable, Equatable {
    /// Clients with long polling's state (exchanges, POST queue, requests).
    public var holdingHTTP = 0
    /// Clients with WebSocket upgrade scratch (request, key, path).
    public var holdingUpgradeScratch = 0
    /// Clients with a binary packet's head or attachments kept.
    public var holdingBinary = 0
    /// Clients with emits awaiting their ack or echo.
    public var holdingPending = 0
    /// Clients with a user name rendered.
    public var holdingUserName = 0
    /// Write and input queues the loop's connections hold (`EventLoop.heldBufferCount`).
    public var loopBuffers = 0

    /// Nothing held.
    public init() {}
}

extension SocketIOClients {
    /// Bytes of the fixed record kept per client whether or not it connects (its `SocketIOClient`
    /// and its user-name slot).
    public static var recordBytesPerClient: Int { MemoryLayout<SocketIOClient>.stride + MemoryLayout<[UInt8]>.stride }

    /// What the clients hold now (call on the loop's thread).
    public var memory: SocketIOClientsMemory {
        var m = SocketIOClientsMemory()
        for k in clients.indices {
            if clients[k].connections.http != nil { m.holdingHTTP += 1 }
            if clients[k].connections.webSocket.holdsUpgradeScratch { m.holdingUpgradeScratch += 1 }
            if clients[k].session.binaryHead.capacity > 0 || clients[k].session.attachments.capacity > 0 { m.holdingBinary += 1 }
            if clients[k].pending.count > 0 { m.holdingPending += 1 }
            if !userNames[k].isEmpty { m.holdingUserName += 1 }
        }
        m.loopBuffers = loop.heldBufferCount
        return m
    }
}
