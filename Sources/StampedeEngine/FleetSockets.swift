import CStampedeLinux
import Foundation
import StampedeLoop

/// The few sockets of the coordinator–worker protocol (not the load's: those live on the loops).
enum FleetSockets {
    /// Connects to `address` within `timeoutNs`; the connected descriptor, or why not.
    static func connect(to address: SocketAddress, timeoutNs: UInt64) -> Result<Int32, RunSetupError> {
        let fd = cs_socket_tcp(address.family)
        guard fd >= 0 else { return .failure(RunSetupError("cannot make a socket: \(errnoDescription(cs_errno()))")) }
        if address.connectBlocking(fd) != 0 {
            let e = cs_errno()
            guard e == EINPROGRESS || e == EINTR else {
                close(fd)
                return .failure(RunSetupError("cannot connect to worker \(address): \(errnoDescription(e))"))
            }
            var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&p, 1, Int32(timeoutNs / 1_000_000))
            var err: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len)
            guard ready > 0, err == 0 else {
                close(fd)
                return .failure(RunSetupError("cannot connect to worker \(address): \(ready > 0 ? errnoDescription(err) : "timed out")"))
            }
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return .success(fd)
    }

    /// A listening socket on `address` (port 0: the kernel picks); its descriptor and port.
    static func listen(on address: SocketAddress) -> Result<(fd: Int32, port: UInt16), RunSetupError> {
        let fd = cs_socket_tcp(address.family)
        guard fd >= 0 else { return .failure(RunSetupError("cannot make a socket: \(errnoDescription(cs_errno()))")) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard address.bind(fd) == 0, Glibc.listen(fd, 16) == 0 else {
            let e = cs_errno()
            close(fd)
            return .failure(RunSetupError("cannot listen on \(address): \(errnoDescription(e))"))
        }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let port: UInt16 = withUnsafeMutablePointer(to: &storage) { p in
            _ = p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
            // sin_port and sin6_port sit at the same offset, network order.
            return p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
        }
        return .success((fd, port))
    }

    /// The first connection on `listener` (polled every 200 ms so `stop` is heard); nil when
    /// `stop` said so.
    static func acceptOne(_ listener: Int32, stop: () -> Bool) -> Int32? {
        while !stop() {
            var p = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 200) > 0 else { continue }
            let fd = cs_accept(listener)
            if fd >= 0 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            // Out of descriptors (EMFILE, ENFILE) the connection stays waiting and poll says so
            // at once: rest instead of spinning.
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }

    /// A pipe whose ends close on exec (the child gets its own copies through dup2).
    static func pipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [0, 0]
        guard Glibc.pipe(&fds) == 0 else { return nil }
        // Set before any other process is spawned (workers are started one at a time).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// This kernel's boot id: processes that share it share CLOCK_MONOTONIC.
    static var bootID: String {
        (try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    static var hostname: String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, 255)
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
