import CStampedeLinux
import StampedeLoop
import StampedeWire

/// `stampede serve --max-connections N`: at most `limit` WebSocket connections open at once, a
/// known capacity for `stampede capacity --vary clients`. Past it a new upgrade is answered
/// 503 (`refusal`) and closed, as a production connection limit would.
///
/// The count is exact across the processes of `--processes`: the supervisor creates a one-page
/// file in its private folder and every server process maps it MAP_SHARED, taking and giving
/// back slots with atomic compare-and-swap (`cs_slot_acquire`). Alone, a server counts in
/// memory of its own with the same operations.
public final class ConnectionQuota: @unchecked Sendable {
    /// Most connections open at once.
    public let limit: Int
    /// The count: in a shared mapping (never unmapped: it lives as long as the process), or
    /// this process's own allocation.
    let count: UnsafeMutablePointer<Int64>

    /// Largest `--max-connections` accepted.
    public static let maxLimit = 10_000_000

    /// A quota counted in this process only.
    public init(limit: Int) {
        self.limit = limit
        count = .allocate(capacity: 1)
        count.initialize(to: 0)
    }

    /// A quota counted in the file at `path`, shared with every process that maps it: `create`
    /// makes the file (it must not exist yet; the supervisor does this once), else it is opened.
    public init(limit: Int, sharedFile path: String, create: Bool) throws(LoopError) {
        self.limit = limit
        guard let p = path.withCString({ cs_shared_counter($0, create ? 1 : 0) }) else {
            throw LoopError(operation: "map the shared connection count \(path)", errno: cs_errno())
        }
        count = p
    }

    /// Takes a slot for a connection being upgraded: false when `limit` are open already.
    @inline(__always)
    public func acquire() -> Bool { cs_slot_acquire(count, Int64(limit)) != 0 }

    /// Gives back the slot of a connection that closed (at once, so the next upgrade may have it).
    @inline(__always)
    public func release() { cs_slot_release(count) }

    /// Connections holding a slot now (every process's, when shared).
    public var current: Int { Int(cs_slot_count(count)) }

    /// The answer to an upgrade past the limit: 503, `Connection: close`, a short text body.
    public static let refusal: [UInt8] = {
        let body: StaticString = "Service Unavailable: the server is at its connection limit.\n"
        return [UInt8](unsafeUninitializedCapacity: 512) { out, n in
            let buffer = UnsafeMutableRawBufferPointer(out)
            guard let head = HTTPResponseWriter.writeHead(into: buffer, status: 503, reason: "Service Unavailable",
                                                          contentType: "text/plain; charset=utf-8",
                                                          body: .length(body.utf8CodeUnitCount), connectionClose: true),
                  head + body.utf8CodeUnitCount <= buffer.count else { n = 0; return }
            UnsafeMutableRawBufferPointer(rebasing: buffer[head...]).copyMemory(from: UnsafeRawBufferPointer(start: body.utf8Start, count: body.utf8CodeUnitCount))
            n = head + body.utf8CodeUnitCount
        }
    }()

    /// Answers `id` with `refusal` and closes it once written.
    public static func refuse(_ loop: EventLoop, _ id: ConnectionID) {
        refusal.withUnsafeBytes { loop.write(id, $0) }
        loop.closeAfterFlush(id)
    }
}
