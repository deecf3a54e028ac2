import StampedeWire

// A `.events` body goes through `SSEParser` the way its documentation asks: each de-chunked
// piece straight from the caller's buffer while the parser holds nothing back, and only an
// unconsumed tail (an event that continues in a later read) copied into `carry`, to which the
// following pieces are appended until the parser has used it all up. ASP.NET flushes one event
// per chunk, so the copy is rare.

extension HTTPClientExchange {
    /// Parses the body piece `buffer[piece]` (already consumed by the HTTP parser). Returns an
    /// event, with the consumed count that covers it (the rest of the piece is left for the next
    /// call, in `pieceLeft`), or nil when the piece holds no further event (its unconsumed tail
    /// then moved to `carry`). Only while `carry` is empty.
    mutating func nextEvent(_ buffer: UnsafeRawBufferPointer, piece: Range<Int>) -> (action: Action, consumed: Int)? {
        let view = UnsafeRawBufferPointer(rebasing: buffer[piece])
        let (event, used) = sse.next(view)
        switch event {
        case .event(let data):
            pieceLeft = piece.count - used
            return (.event((piece.lowerBound + data.lowerBound)..<(piece.lowerBound + data.upperBound)), piece.lowerBound + used)
        case .assembledEvent:
            pieceLeft = piece.count - used
            held = .assembled
            return (.heldEvent, piece.lowerBound + used)
        case .needMore:
            if used < piece.count {
                carry.append(contentsOf: UnsafeRawBufferPointer(rebasing: view[used...]))
                carryStart = 0
            }
            return nil
        case .error(let e):
            return (.ended(eventStreamFailed(e)), 0)
        }
    }

    /// The next event from `carry`, or nil once the event parser has used up what it can (the
    /// consumed prefix of `carry` is then dropped).
    mutating func nextCarriedEvent() -> Action? {
        let start = carryStart
        let (event, used) = carry.withUnsafeBytes { sse.next(UnsafeRawBufferPointer(rebasing: $0[start...])) }
        carryStart += used
        switch event {
        case .event(let data):
            held = .carry((start + data.lowerBound)..<(start + data.upperBound))
            return .heldEvent
        case .assembledEvent:
            held = .assembled
            return .heldEvent
        case .needMore:
            carryPending = false
            if carryStart == carry.count {
                carry.removeAll(keepingCapacity: true)
            } else if carryStart > 0 {
                carry.removeSubrange(0..<carryStart)
            }
            carryStart = 0
            return nil
        case .error(let e):
            return .ended(eventStreamFailed(e))
        }
    }

    private mutating func eventStreamFailed(_ e: SSEParseError) -> HTTPExchangeEnd {
        state = .failed
        awaitedDeadline = nil
        return .invalidEventStream(e)
    }
}
