import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// How one connection's bytes cross its socket: the seam between the protocol sessions above
/// (which see only plaintext bytes) and the transport below. The loop reads, writes and shuts
/// down every connection through its stream, so a transport added here serves every protocol
/// and every workload at once, with no change above the loop.
///
/// A value per connection slot, switched on in the read and write paths: no existential and no
/// allocation per call.
public enum ByteStream: Sendable, Equatable {
    /// The socket's bytes are the protocol's bytes.
    case plainTCP
    /// TLS over the socket (OpenSSL with memory BIOs, see `TLSConnection`); the loop runs the
    /// handshake before the connection becomes a `.stream`.
    case tls(TLSConnection)

    public static func == (a: ByteStream, b: ByteStream) -> Bool {
        switch (a, b) {
        case (.plainTCP, .plainTCP): true
        case (.tls(let x), .tls(let y)): x === y
        default: false
        }
    }

    /// Reads what the socket has into `buffer`: `.done(0)` is the peer's end of stream.
    @inline(__always)
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        switch self {
        case .plainTCP: syscall { Glibc.read(fd, buffer.baseAddress, buffer.count) }
        case .tls(let t): t.read(fd, into: buffer)
        }
    }

    /// Writes as much of `bytes` as the socket takes now (never raising SIGPIPE).
    @inline(__always)
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        switch self {
        case .plainTCP: syscall { cs_send_nosignal(fd, bytes.baseAddress, bytes.count) }
        case .tls(let t): t.write(fd, bytes)
        }
    }

    /// The last write waits for input, not for the socket (`TLSConnection.writeAwaitsInput`).
    @inline(__always)
    var writeAwaitsInput: Bool {
        switch self {
        case .plainTCP: false
        case .tls(let t): t.writeAwaitsInput
        }
    }

    /// Output the stream made but the socket has not taken yet (TLS records).
    @inline(__always)
    var hasPendingOutput: Bool {
        switch self {
        case .plainTCP: false
        case .tls(let t): t.hasPendingCiphertext
        }
    }

    /// Sends output the stream holds itself; `.done` once none is left.
    func flushPendingOutput(_ fd: Int32) -> IOResult {
        switch self {
        case .plainTCP: .done(0)
        case .tls(let t): t.flushCiphertext(fd)
        }
    }

    /// Input the stream has taken off the socket but not yet returned from `read`.
    @inline(__always)
    var hasBufferedInput: Bool {
        switch self {
        case .plainTCP: false
        case .tls(let t): t.hasBufferedInput
        }
    }

    /// Says goodbye at the stream's level before the socket closes (TLS: close_notify, best effort).
    func closeGracefully(_ fd: Int32) {
        if case .tls(let t) = self { t.sendCloseNotify(fd) }
    }

    /// Ends our direction of the stream once everything queued is written (TCP: a FIN; TLS:
    /// close_notify, then the FIN). Returns 0 or the errno.
    func shutdownWrite(_ fd: Int32) -> Int32 {
        closeGracefully(fd)
        return syscallStatus { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }
}
