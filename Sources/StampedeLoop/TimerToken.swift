/// What a timer is for: the only timer-token layout in Stampede. Whoever schedules a timer
/// names what it does (`kind`), which slot it concerns (`slot`: a client, connection or table
/// index) and which use of that slot it belongs to (`epoch`: a connection attempt, a send chain,
/// a storm), in named fields rather than bits of an integer. Timers cannot be cancelled, so the
/// code that receives one compares `epoch` with the slot's current one and ignores a stale timer.
///
/// `layer` keeps apart the timers of code stacked on one loop: the loop's own (connect timeouts,
/// the limits sweep, never seen by handlers), a connection runtime's (upgrade and close
/// timeouts of `WebSocketClients`) and the application's above it (a workload's sends).
public struct TimerToken: Hashable, Sendable, CustomStringConvertible {
    public enum Layer: UInt8, Sendable {
        /// The event loop's own timers; `schedule(at:token:)` refuses them.
        case loop
        /// A connection runtime's: protocol deadlines it handles before the application.
        case connection
        /// The workload's or server's.
        case application
    }

    public var layer: Layer
    /// What the timer does, in its scheduler's numbering (the raw value of its own enum).
    public var kind: UInt8
    /// The slot the timer concerns.
    public var slot: UInt32
    /// Which use of the slot the timer belongs to.
    public var epoch: UInt32

    @inlinable
    public init(layer: Layer = .application, kind: UInt8, slot: UInt32 = 0, epoch: UInt32 = 0) {
        self.layer = layer; self.kind = kind; self.slot = slot; self.epoch = epoch
    }

    /// A token whose kind is a case of the scheduler's own enum.
    @inlinable
    public init<Kind: RawRepresentable>(layer: Layer = .application, _ kind: Kind, slot: Int, epoch: UInt32 = 0)
    where Kind.RawValue == UInt8 {
        self.init(layer: layer, kind: kind.rawValue, slot: UInt32(truncatingIfNeeded: slot), epoch: epoch)
    }

    /// The kind as the scheduler's enum (nil: a kind it does not know).
    @inlinable
    public func kind<Kind: RawRepresentable>(as _: Kind.Type) -> Kind? where Kind.RawValue == UInt8 { Kind(rawValue: kind) }

    /// The slot as an array index.
    @inlinable public var index: Int { Int(slot) }

    public var description: String { "\(layer):\(kind) slot \(slot) epoch \(epoch)" }
}
