import Foundation
import StampedeLoop
import StampedeScenario
import Synchronization

/// Resolves the host names negotiate redirects name (Azure SignalR Service sends clients to
/// `NAME.service.signalr.net`), off the event loops: getaddrinfo blocks, so it runs on a thread
/// of its own, one name after another, and each name is resolved once for the whole run (every
/// loop shares the one resolver). A loop asks with `lookUp`; an answer not known yet comes back
/// later through the callback, which the loop turns into one of its own tasks.
public final class HubRedirectResolver: Sendable {
    /// What a name resolved to: addresses (port 0; the redirect URL's port is put in by the
    /// caller) chosen by the scenario's `resolve` policy, or why there are none.
    public enum Answer: Sendable, Equatable {
        case addresses([SocketAddress])
        case failed(String)
    }

    /// At most this many distinct names per run: a server cannot grow the cache (or the
    /// resolver's queue) without bound.
    public static let maxNames = 256

    private struct State {
        var answers: [String: Answer] = [:]
        var waiting: [String: [@Sendable (Answer) -> Void]] = [:]
        var queue: [String] = []
        var running = false
    }

    private let state = Mutex(State())
    private let policy: ResolvePolicy
    /// Lookups done (each distinct name once), for tests.
    private let lookups = Atomic<Int>(0)

    public init(policy: ResolvePolicy) { self.policy = policy }

    /// How many names went through getaddrinfo so far.
    public var lookupCount: Int { lookups.load(ordering: .relaxed) }

    /// `name`'s answer if known; otherwise nil, and `deliver` is called with it once it is
    /// (on the resolver's thread: the caller hands it to its loop). `name` is lower-cased.
    public func lookUp(_ name: String, deliver: @escaping @Sendable (Answer) -> Void) -> Answer? {
        let (known, startThread): (Answer?, Bool) = state.withLock { s in
            if let a = s.answers[name] { return (a, false) }
            if s.waiting[name] != nil {
                s.waiting[name]!.append(deliver)
                return (nil, false)
            }
            guard s.answers.count + s.waiting.count < Self.maxNames else {
                return (.failed("more than \(Self.maxNames) distinct redirect hosts in one run"), false)
            }
            s.waiting[name] = [deliver]
            s.queue.append(name)
            if s.running { return (nil, false) }
            s.running = true
            return (nil, true)
        }
        if startThread {
            let t = Thread { [self] in work() }
            t.name = "stampede-resolve"
            t.start()
        }
        return known
    }

    /// The resolver thread: names in the order asked, until none is waiting.
    private func work() {
        while let name = state.withLock({ s -> String? in
            if s.queue.isEmpty { s.running = false; return nil }
            return s.queue.removeFirst()
        }) {
            let answer = resolve(name)
            lookups.add(1, ordering: .relaxed)
            let waiters = state.withLock { s -> [@Sendable (Answer) -> Void] in
                s.answers[name] = answer
                return s.waiting.removeValue(forKey: name) ?? []
            }
            for deliver in waiters { deliver(answer) }
        }
    }

    private func resolve(_ name: String) -> Answer {
        let family: HostLookup.Family = policy == .ipv4 ? .ipv4 : policy == .ipv6 ? .ipv6 : .any
        switch HostLookup.addresses(of: name, port: 0, family: family) {
        case .failure(let e):
            return .failed(e.description)
        case .success(let found):
            let chosen = policy == .first ? Array(found.prefix(1)) : found
            return chosen.isEmpty ? .failed("no address") : .addresses(chosen)
        }
    }
}
