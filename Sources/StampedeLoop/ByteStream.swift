import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// How one connection's bytes cross its socket: the seam between the protocol sessions above
/// (which see only plaintext bytes) and the transport below. The loop reads, writes and shuts
/// down every connection through its stream, so a transport added here (TLS is next) serves
/// every protocol and every workload at once, with no change above the loop.
///
/// A value per connection slot, switched on in the read and write paths: no existential and no
/// allocation per call.
public enum ByteStream: Sendable, Equatable {
    /// The socket's bytes are the protocol's bytes.
    case plainTCP

    /// Reads what the socket has into `buffer`: `.done(0)` is the peer's end of stream.
    @inline(__always)
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        switch self {
        case .plainTCP: syscall { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        }
    }

    /// Writes as much of `bytes` as the socket takes now (never raising SIGPIPE).
    @inline(__always)
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        switch self {
        case .plainTCP: syscall { cs_send_nosignal(fd, bytes.baseAddress, bytes.count) }
        }
    }

    /// Ends our direction of the stream once everything queued is written (TCP: a FIN).
    /// Returns 0 or the errno.
    func shutdownWrite(_ fd: Int32) -> Int32 {
        switch self {
        case .plainTCP: syscallStatus { Glibc.shutdown(fd, Int32(SHUT_WR)) }
        }
    }
}
