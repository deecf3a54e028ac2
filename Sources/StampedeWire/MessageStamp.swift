/// What a workload stamps into every message it sends (chat texts, hub call arguments) so that
/// any receiver can measure latency without a shared table: who sent it, which one, when it was
/// meant to go, when it went. `ChatCodec` writes and reads it as text.
public struct MessageStamp: Sendable, Equatable {
    /// Global client index of the sender.
    public var sender: UInt32
    public var sequence: UInt32
    /// Intended send time (monotonic ns): the open model's schedule.
    public var intendedNs: UInt64
    /// Actual send time (monotonic ns).
    public var actualNs: UInt64
    public init(sender: UInt32, sequence: UInt32, intendedNs: UInt64, actualNs: UInt64) {
        self.sender = sender; self.sequence = sequence; self.intendedNs = intendedNs; self.actualNs = actualNs
    }
}
