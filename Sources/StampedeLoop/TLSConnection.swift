import COpenSSL
import CStampedeLinux
import CStampedeTLS
#if canImport(Glibc)
import Glibc
#endif

/// One connection's TLS state: an `SSL` with two memory BIOs. The loop moves ciphertext between
/// the socket and the BIOs itself, so OpenSSL never touches the file descriptor and every call
/// here is non-blocking.
public final class TLSConnection: @unchecked Sendable {
    let ssl: OpaquePointer
    private(set) var rbio: OpaquePointer
    private(set) var wbio: OpaquePointer
    let context: TLSContext
    /// Server side: the listener that accepted it, announced to the handler once the handshake is done.
    var listener: ConnectionID?
    /// When the TCP connection was established (the handshake's start), then how long the
    /// handshake took once it is done.
    var handshakeStartNs: UInt64 = 0
    var handshakeDurationNs: UInt64 = 0
    /// The last `write` could not encrypt until the peer's handshake messages arrive (a TLS 1.2
    /// renegotiation under way): the loop retries it after the next read, not when the socket
    /// is writable, which it already is.
    private(set) var writeAwaitsInput = false

    /// `serverName`, when given, replaces the context's for this connection (SNI and the
    /// certificate's name check): a hub client that a negotiate redirect sent to another host.
    init?(context: TLSContext, reuse: TLSSessionReuse = .none, serverName: String? = nil) {
        guard let ssl = SSL_new(context.ctx) else { return nil }
        var r: OpaquePointer? = nil, w: OpaquePointer? = nil
        guard cst_attach_memory_bios(ssl, &r, &w) == 1, let r, let w else { SSL_free(ssl); return nil }
        _ = cst_set_connection_modes(ssl)
        if context.role == .client {
            if let name = serverName ?? context.serverName, cst_set_peer_name(ssl, name) != 1 { SSL_free(ssl); return nil }
            context.prepare(ssl, for: reuse)
            SSL_set_connect_state(ssl)
        } else {
            SSL_set_accept_state(ssl)
        }
        self.ssl = ssl; rbio = r; wbio = w
        self.context = context
    }

    deinit { SSL_free(ssl) }  // frees both BIOs

    /// Whether the finished handshake resumed an earlier session.
    var resumed: Bool { SSL_session_reused(ssl) == 1 }

    /// The ALPN protocol the peer chose, if any.
    var alpnProtocol: String? {
        var data: UnsafePointer<UInt8>? = nil
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    enum HandshakeStep: Equatable { case done, waiting, failed(Int32) }

    /// Advances the handshake with what the socket has; `scratch` receives ciphertext on its way
    /// into the read BIO. `.failed` carries a `TLSFailure` raw value or an errno.
    func handshake(_ fd: Int32, scratch: UnsafeMutableRawBufferPointer) -> HandshakeStep {
        for _ in 0..<16 {
            ERR_clear_error()
            let r = SSL_do_handshake(ssl)
            // Whatever it produced goes out first, including the alert of a failure.
            let sent = flushCiphertext(fd)
            if r == 1 { return .done }
            let err = SSL_get_error(ssl, r)
            if err == SSL_ERROR_WANT_READ {
                if case .failed(let e) = sent { return .failed(e == ECONNRESET || e == EPIPE ? TLSFailure.closedDuringHandshake.rawValue : e) }
                switch syscall({ Glibc.read(fd, scratch.baseAddress, scratch.count) }) {
                case .wouldBlock: return .waiting
                case .done(0): return fail(.closedDuringHandshake, reason: "end of file during the handshake")
                case .done(let n): _ = BIO_write(rbio, scratch.baseAddress, Int32(n))
                case .failed(let e):
                    if e == ECONNRESET || e == EPIPE { return fail(.closedDuringHandshake, reason: "reset during the handshake") }
                    return .failed(e)
                }
            } else if err == SSL_ERROR_WANT_WRITE {
                return .waiting
            } else {
                return fail(classify(err), reason: Self.describeFailure(ssl))
            }
        }
        return .waiting
    }

    private func fail(_ failure: TLSFailure, reason: String) -> HandshakeStep {
        context.noteFailure(failure, reason: reason)
        return .failed(failure.rawValue)
    }

    /// Sorts a handshake error into the classes the run counts.
    private func classify(_ err: Int32) -> TLSFailure {
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK { return .verifyFailed }
        if err == SSL_ERROR_SYSCALL || err == SSL_ERROR_ZERO_RETURN { return .closedDuringHandshake }
        let e = ERR_peek_error()
        if cst_err_lib(e) == ERR_LIB_SSL {
            switch cst_err_reason(e) {
            case SSL_R_WRONG_VERSION_NUMBER, SSL_R_PACKET_LENGTH_TOO_LONG, SSL_R_RECORD_LENGTH_MISMATCH,
                 SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_UNKNOWN_PROTOCOL, SSL_R_WRONG_SSL_VERSION,
                 SSL_R_UNEXPECTED_MESSAGE, SSL_R_UNEXPECTED_RECORD:
                return .protocolError
            case SSL_R_CERTIFICATE_VERIFY_FAILED: return .verifyFailed
            default: break
            }
        }
        return .handshakeFailed
    }

    static func describeFailure(_ ssl: OpaquePointer) -> String {
        let verify = SSL_get_verify_result(ssl)
        if verify != X509_V_OK, let text = X509_verify_cert_error_string(Int(verify)) {
            return String(cString: text)
        }
        return TLSContext.takeErrors()
    }

    // MARK: Data

    /// Decrypts into `buffer` as much as the socket has, reading ciphertext into `buffer` first.
    /// Stops when the buffer is full or OpenSSL wants bytes the socket does not have yet, so no
    /// complete record is left in the read BIO unless the buffer is full (the loop reads again
    /// while a full buffer comes back).
    func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        var total = 0
        for _ in 0..<64 {
            guard total < buffer.count else { break }
            let free = UnsafeMutableRawBufferPointer(rebasing: buffer[total...])
            ERR_clear_error()
            let n = SSL_read(ssl, free.baseAddress, Int32(min(free.count, Int(Int32.max))))
            if n > 0 { total += Int(n); continue }
            let err = SSL_get_error(ssl, n)
            if err == SSL_ERROR_WANT_READ {
                switch syscall({ Glibc.read(fd, free.baseAddress, free.count) }) {
                case .done(0): return total > 0 ? .done(total) : .done(0)  // TCP end without close_notify
                case .done(let k): _ = BIO_write(rbio, free.baseAddress, Int32(k))
                case .wouldBlock:
                    releaseIdleBuffers()
                    return total > 0 ? .done(total) : .wouldBlock
                case .failed(let e): return total > 0 ? .done(total) : .failed(e)
                }
            } else if err == SSL_ERROR_ZERO_RETURN {
                return total > 0 ? .done(total) : .done(0)  // close_notify
            } else {
                return total > 0 ? .done(total) : .failed(EPROTO)
            }
        }
        // Reading may have produced records to send (a TLS 1.3 key update answer): best effort now,
        // the rest with the next flush.
        if hasPendingCiphertext { _ = flushCiphertext(fd) }
        return total > 0 ? .done(total) : .wouldBlock
    }

    /// Gives OpenSSL's 16 KiB record buffers back once the socket has nothing more to read.
    /// SSL_MODE_RELEASE_BUFFERS alone leaves the read buffer allocated after a TLS 1.3 client has
    /// processed the server's NewSessionTicket messages (OpenSSL 3.0): 16.5 KiB on every idle
    /// client connection. SSL_free_buffers does nothing while a partial record is buffered.
    private func releaseIdleBuffers() {
        if cst_bio_pending(rbio) == 0 { _ = SSL_free_buffers(ssl) }
        shrinkMemoryBIOs(above: Self.keptBIOBytes)
    }

    /// A memory BIO keeps the largest size it ever had; past this, an empty one is replaced.
    static let keptBIOBytes = 4096

    /// Replaces an empty memory BIO holding more than `limit` bytes with a new one (OpenSSL frees
    /// the old): the handshake's flights and a large message otherwise stay allocated for the
    /// connection's life. Called after the handshake (limit 0) and when reading or writing is idle.
    func shrinkMemoryBIOs(above limit: Int) {
        if cst_bio_pending(rbio) == 0, cst_bio_capacity(rbio) > limit, let b = cst_new_memory_bio() {
            SSL_set0_rbio(ssl, b)
            rbio = b
        }
        if cst_bio_pending(wbio) == 0, cst_bio_capacity(wbio) > limit, let b = cst_new_memory_bio() {
            SSL_set0_wbio(ssl, b)
            wbio = b
        }
    }

    /// Encrypts up to one record of `bytes` once earlier ciphertext has gone out; reports the
    /// plaintext bytes taken. Their ciphertext may still wait (`hasPendingCiphertext`).
    ///
    /// During a TLS 1.2 renegotiation SSL_write cannot encrypt until the peer's next handshake
    /// messages are read (SSL_ERROR_WANT_READ): that is `.wouldBlock` with `writeAwaitsInput`,
    /// and the caller retries with the same bytes at their start (OpenSSL's rule for a retried
    /// write; more may follow them) once input was read.
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> IOResult {
        writeAwaitsInput = false
        switch flushCiphertext(fd) {
        case .failed(let e): return .failed(e)
        case .wouldBlock: return .wouldBlock
        case .done: break
        }
        ERR_clear_error()
        let n = SSL_write(ssl, bytes.baseAddress, Int32(min(bytes.count, 16 * 1024)))
        if n <= 0 {
            guard SSL_get_error(ssl, n) == SSL_ERROR_WANT_READ else { return .failed(EPROTO) }
            // Our part of the handshake (the renegotiation's ClientHello, say) goes out first.
            switch flushCiphertext(fd) {
            case .failed(let e): return .failed(e)
            case .wouldBlock: return .wouldBlock  // retried when the socket takes it
            case .done: break
            }
            writeAwaitsInput = true
            return .wouldBlock
        }
        if case .failed(let e) = flushCiphertext(fd) { return .failed(e) }
        return .done(Int(n))
    }

    var hasPendingCiphertext: Bool { cst_bio_pending(wbio) > 0 }
    /// Decrypted or undecrypted input kept by OpenSSL (read without the socket being readable).
    var hasBufferedInput: Bool { cst_bio_pending(rbio) > 0 || SSL_pending(ssl) > 0 }

    /// Sends the write BIO's ciphertext: `.done` once it is all out.
    func flushCiphertext(_ fd: Int32) -> IOResult {
        var sentTotal = 0
        for _ in 0..<64 {
            var data: UnsafePointer<CChar>? = nil
            let count = cst_bio_peek(wbio, &data)
            guard count > 0, let data else {
                // A large message's records are out: the BIO need not keep their size.
                if sentTotal > Self.keptBIOBytes { shrinkMemoryBIOs(above: Self.keptBIOBytes) }
                return .done(sentTotal)
            }
            switch syscall({ cs_send_nosignal(fd, data, Int(count)) }) {
            case .done(let n):
                sentTotal += n
                discard(n)
            case .wouldBlock: return .wouldBlock
            case .failed(let e): return .failed(e)
            }
        }
        return hasPendingCiphertext ? .wouldBlock : .done(sentTotal)
    }

    /// Drops `n` sent bytes from the write BIO (through a stack buffer: a memory BIO cannot skip).
    private func discard(_ n: Int) {
        withUnsafeTemporaryAllocation(byteCount: 4096, alignment: 1) { tmp in
            var left = n
            while left > 0 {
                let r = BIO_read(wbio, tmp.baseAddress, Int32(min(left, tmp.count)))
                if r <= 0 { return }
                left -= Int(r)
            }
        }
    }

    /// close_notify, best effort: queued into the write BIO and sent if the socket takes it.
    func sendCloseNotify(_ fd: Int32) {
        guard SSL_is_init_finished(ssl) == 1 else { return }
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        _ = flushCiphertext(fd)
    }
}
