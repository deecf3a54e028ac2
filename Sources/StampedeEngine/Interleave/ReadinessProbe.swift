import CStampedeLinux
import Foundation
import StampedeLoop
#if canImport(Glibc)
import Glibc
#endif

/// Whether a TCP listener accepts connections at one address, resolved once beforehand so that
/// polling never repeats a name lookup.
struct ReadinessProbe: Sendable {
    let address: SocketAddress

    /// The URL's literal address, or the first address the host resolves to (one lookup).
    static func resolve(host: String, port: Int) -> Result<ReadinessProbe, InterleaveFailure> {
        guard (1...65535).contains(port) else { return .failure(InterleaveFailure("port \(port) is out of range")) }
        if let literal = SocketAddress(host: host, port: port) { return .success(ReadinessProbe(address: literal)) }
        switch HostLookup.addresses(of: host, port: UInt16(port)) {
        case .success(let list): return .success(ReadinessProbe(address: list[0]))
        case .failure(let f): return .failure(InterleaveFailure("cannot resolve \(host): \(f)"))
        }
    }

    /// One non-blocking connect attempt, given at most `wait` seconds to complete (a host that
    /// drops packets must not stall the poll).
    func accepts(wait: Double = 0.2) -> Bool {
        let fd = cs_socket_tcp(address.family)  // non-blocking, close-on-exec
        guard fd >= 0 else { return false }
        defer { close(fd) }
        if address.connectBlocking(fd) == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, Int32(wait * 1000)) == 1 else { return false }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0
    }
}
