import Testing
@testable import StampedeLoop

/// A connection holds a write or input queue only while bytes are in it (issue 15, item 4):
/// drained queues go back to the loop's spares and the next writer reuses one, so an idle
/// connection costs no buffer and steady traffic allocates none. `heldBufferCount` (what the
/// hub's memory test reads) agrees with the slots.
@Suite struct SpareBufferTests {
    @Test func aDrainedWriteQueueIsReleasedAndReusedByTheNextWrite() throws {
        let server = try TestLoop({ h in
            h.onReceived = { id, bytes, loop in bytes.withUnsafeBytes { loop.write(id, $0) } }  // echo
        }, name: "server")
        let client = try TestLoop(name: "client")
        defer { client.shutdown(); server.shutdown() }
        let pair = try ConnectedPair(server: server, client: client)

        client.write(pair.clientID, Array("hello".utf8))
        client.handler.wait("echo") { $0.receivedCount(on: pair.clientID) == 5 }
        // Both sides wrote and both are idle again: neither connection holds a queue.
        #expect(client.sync { $0.heldBufferCount } == 0)
        #expect(server.sync { $0.heldBufferCount } == 0)
        #expect(client.sync { loop in loop.slots.allSatisfy { $0.out == nil && $0.pending == nil } })
        #expect(server.sync { loop in loop.slots.allSatisfy { $0.out == nil && $0.pending == nil } })
        let spare = try #require(client.sync { loop in loop.spareBuffers.last.map(ObjectIdentifier.init) })

        for round in 1...20 {
            client.write(pair.clientID, Array("again".utf8))
            client.handler.wait("echo \(round)") { $0.receivedCount(on: pair.clientID) == 5 + 5 * round }
        }
        // Every write took the same spare queue and gave it back: no queue was made.
        #expect(client.sync { $0.spareBuffers.count } == 1)
        #expect(client.sync { loop in loop.spareBuffers.last.map(ObjectIdentifier.init) } == spare)
        #expect(client.sync { $0.heldBufferCount } == 0)
    }

    @Test func unconsumedInputIsHeldOnlyUntilItIsConsumed() throws {
        // The server consumes input only in whole 4-byte records.
        let server = try TestLoop({ h in h.consume = { _, b, _ in b.count - b.count % 4 } }, name: "server")
        let client = try TestLoop(name: "client")
        defer { client.shutdown(); server.shutdown() }
        let pair = try ConnectedPair(server: server, client: client)

        client.write(pair.clientID, [1, 2, 3, 4, 5, 6])
        server.handler.wait("first record") { $0.receivedCount(on: pair.serverID) == 4 }
        #expect(server.sync { $0.heldBufferCount } == 1)  // two bytes of a record wait
        #expect(server.sync { loop in loop.slots.filter { $0.pending != nil }.count } == 1)
        client.write(pair.clientID, [7, 8])
        server.handler.wait("second record") { $0.receivedCount(on: pair.serverID) == 8 }
        #expect(server.sync { $0.heldBufferCount } == 0)
        #expect(server.sync { loop in loop.slots.allSatisfy { $0.pending == nil } })
        #expect(server.handler.received(on: pair.serverID) == [1, 2, 3, 4, 5, 6, 7, 8])
    }
}
