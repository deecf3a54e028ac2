import StampedeLoop

/// Stateful reconnect bookkeeping (docs/protocols.md §6): outgoing messages of types 1–5 are numbered
/// from 1 and kept until acked; incoming ones are counted and acked about a second later.
final class HubStatefulState {
    /// Numbered messages sent so far (the last id used).
    var sent: UInt64 = 0
    /// Unacked messages, oldest first, and their lengths.
    let buffer = ByteBuffer()
    var lengths: [Int] = []
    var lengthsHead = 0
    /// Id of the oldest buffered message (`sent + 1` when none).
    var firstBufferedId: UInt64 = 1
    /// Highest numbered message processed, and the id of the last one seen.
    var received: UInt64 = 0
    var incoming: UInt64 = 0
    var ackDue: UInt64 = .max
    /// After a resume, everything before the client's Sequence is ignored.
    var awaitingSequence = false

    func record(_ message: UnsafeRawBufferPointer) {
        sent += 1
        buffer.append(message)
        lengths.append(message.count)
    }

    func ack(_ id: UInt64) {
        while firstBufferedId <= id && lengthsHead < lengths.count {
            buffer.consume(lengths[lengthsHead])
            lengthsHead += 1
            firstBufferedId += 1
        }
        if lengthsHead == lengths.count {
            lengths.removeAll(keepingCapacity: true)
            lengthsHead = 0
        } else if lengthsHead > 1024 && lengthsHead * 2 > lengths.count {
            lengths.removeFirst(lengthsHead)
            lengthsHead = 0
        }
    }
}
