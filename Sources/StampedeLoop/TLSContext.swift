import COpenSSL
import CStampedeTLS
import Synchronization

/// How a TLS handshake failed. A client hears it as the `error` of `connectCompleted` (the raw
/// value: negative, so it never collides with an errno); a server counts it on its context
/// (the handler never hears of a connection whose handshake failed). A handshake that stalls
/// ends as ETIMEDOUT after the connect timeout (client) or `handshakeTimeoutNs` (server).
public enum TLSFailure: Int32, Sendable, CaseIterable, CustomStringConvertible {
    /// The peer refused the handshake (an alert: no shared version or cipher, it rejected our
    /// certificate …) or it failed for another TLS reason.
    case handshakeFailed = -1001
    /// The peer's certificate did not verify: unknown CA, expired, wrong host name
    /// (`TLSContext.lastFailureReason` has OpenSSL's reason).
    case verifyFailed = -1002
    /// The peer does not speak TLS (a plain HTTP or TCP server on a TLS port, or a plain client).
    case protocolError = -1003
    /// The peer closed or reset the connection before the handshake finished.
    case closedDuringHandshake = -1004

    /// The TLS failure a `connectCompleted` error stands for; nil for an errno.
    public init?(connectError: Int32) { self.init(rawValue: connectError) }

    public var description: String {
        switch self {
        case .handshakeFailed: "tls_handshake_failed"
        case .verifyFailed: "tls_verify_failed"
        case .protocolError: "tls_protocol_error"
        case .closedDuringHandshake: "tls_closed_during_handshake"
        }
    }
}

/// A TLS context could not be made (a file missing or unreadable, a key not matching its certificate).
public struct TLSSetupError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// One `SSL_CTX` for a run, shared by every connection of every loop that uses it (OpenSSL
/// allows a context to be used from several threads once it is set up). Made by the caller
/// and passed to `EventLoop.connect(… tls:)` or `EventLoop.listen(… tls:)`.
public final class TLSContext: @unchecked Sendable {
    public enum Role: Sendable { case client, server }
    public let role: Role
    /// Client: the name checked against the server's certificate and sent as SNI (an IP literal
    /// is checked against the certificate's IP addresses and not sent). nil: no name check.
    public let serverName: String?
    /// Server: a handshake not done by then is abandoned (counted as ETIMEDOUT's class,
    /// `handshakeTimeouts`).
    public let handshakeTimeoutNs: UInt64
    let ctx: OpaquePointer

    /// Handshake outcomes, for the tests and the run's metrics (failure paths only take the lock
    /// besides the completion count).
    public struct Counts: Sendable, Equatable {
        public var completed = 0
        public var failed: [TLSFailure: Int] = [:]
        public var timeouts = 0
        /// Handshakes that resumed an earlier session (client contexts with session tickets).
        public var resumed = 0
        public var lastFailureReason = ""
        /// How many failures each OpenSSL reason ended (the first `maxReasons` distinct reasons;
        /// later ones are counted under "other").
        public var reasons: [String: Int] = [:]
        static let maxReasons = 32
    }
    let counts = Mutex(Counts())
    /// Client sessions kept for resumption, one per key (a simulated client), the newest each
    /// client was given (see TLSContext+Client.swift).
    let sessions = Mutex<[Int: KeptSession]>([:])

    /// An `SSL_SESSION` reference: immutable once made, so any thread may resume from it.
    struct KeptSession: @unchecked Sendable { let pointer: OpaquePointer }

    /// A client context: verifies the server against `caFile` (PEM), or the system store when
    /// nil, unless `verify` is false.
    public convenience init(clientCAFile caFile: String? = nil, verify: Bool = true, serverName: String? = nil) throws(TLSSetupError) {
        var c = TLSClientConfiguration()
        c.caFile = caFile; c.verify = verify; c.serverName = serverName
        try self.init(client: c)
    }

    /// A client context as `configuration` describes (the scenario's `tls:` block).
    public convenience init(client configuration: TLSClientConfiguration) throws(TLSSetupError) {
        try self.init(role: .client, serverName: configuration.serverName, handshakeTimeoutNs: 10_000_000_000)
        try configureClient(configuration)
    }

    /// An empty context for `role` that offers TLS 1.2 and later; the public initializers
    /// configure it.
    private init(role: Role, serverName: String?, handshakeTimeoutNs: UInt64) throws(TLSSetupError) {
        guard let ctx = SSL_CTX_new(role == .client ? TLS_client_method() : TLS_server_method()) else {
            throw TLSSetupError(description: "SSL_CTX_new: \(Self.takeErrors())")
        }
        self.ctx = ctx
        self.role = role
        self.serverName = serverName
        self.handshakeTimeoutNs = handshakeTimeoutNs
        _ = cst_ctx_set_min_version(ctx, TLS1_2_VERSION)
    }

    /// A server context with its certificate chain and private key (PEM files).
    public convenience init(serverCertificateFile certificate: String, keyFile key: String, handshakeTimeoutNs: UInt64 = 10_000_000_000) throws(TLSSetupError) {
        try self.init(role: .server, serverName: nil, handshakeTimeoutNs: handshakeTimeoutNs)
        guard SSL_CTX_use_certificate_chain_file(ctx, certificate) == 1 else {
            throw TLSSetupError(description: "certificate \(certificate): \(Self.takeErrors())")
        }
        guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSSetupError(description: "key \(key): \(Self.takeErrors())")
        }
    }

    /// A server context from PEM text in memory (a `SelfSignedCertificate`, or files the caller
    /// read): the first certificate is the server's, any after it its chain.
    public convenience init(serverCertificatePEM: String, privateKeyPEM: String, handshakeTimeoutNs: UInt64 = 10_000_000_000) throws(TLSSetupError) {
        try self.init(role: .server, serverName: nil, handshakeTimeoutNs: handshakeTimeoutNs)
        ERR_clear_error()
        let certificates: [OpaquePointer] = Self.withMemoryBIO(serverCertificatePEM) { bio in
            var all: [OpaquePointer] = []
            while all.count < 16, let x = PEM_read_bio_X509(bio, nil, nil, nil) { all.append(x) }
            return all
        }
        // Reading stops at the end of the text with a "no start line" error: not a failure.
        ERR_clear_error()
        defer { certificates.forEach { X509_free($0) } }
        guard let leaf = certificates.first else { throw TLSSetupError(description: "certificate: no PEM certificate in the text") }
        guard SSL_CTX_use_certificate(ctx, leaf) == 1 else { throw TLSSetupError(description: "certificate: \(Self.takeErrors())") }
        for x in certificates.dropFirst() {
            // add0 takes ownership; the deferred free drops our reference, so keep one more.
            guard X509_up_ref(x) == 1, cst_ctx_add0_chain_cert(ctx, x) == 1 else {
                throw TLSSetupError(description: "certificate chain: \(Self.takeErrors())")
            }
        }
        guard let key = Self.withMemoryBIO(privateKeyPEM, { PEM_read_bio_PrivateKey($0, nil, nil, nil) }) else {
            throw TLSSetupError(description: "key: no PEM private key in the text (\(Self.takeErrors()))")
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSSetupError(description: "key: \(Self.takeErrors())")
        }
    }

    /// A read-only memory BIO over `text` for the length of `body`.
    static func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer?) -> T) -> T {
        var text = text
        return text.withUTF8 { bytes in
            let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(clamping: bytes.count))
            defer { BIO_free(bio) }
            return body(bio)
        }
    }

    deinit {
        sessions.withLock { for s in $0.values { SSL_SESSION_free(s.pointer) } }
        SSL_CTX_free(ctx)
    }

    /// The handshake outcomes so far.
    public var handshakeCounts: Counts { counts.withLock { $0 } }

    func noteFailure(_ failure: TLSFailure, reason: String) {
        counts.withLock {
            $0.failed[failure, default: 0] += 1
            $0.lastFailureReason = reason
            let key = $0.reasons[reason] != nil || $0.reasons.count < Counts.maxReasons ? reason : "other"
            $0.reasons[key, default: 0] += 1
        }
    }

    /// OpenSSL's error queue as text (emptied).
    static func takeErrors() -> String {
        var parts: [String] = []
        for _ in 0..<16 {
            let e = ERR_get_error()
            if e == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(e, &buf, buf.count)
            parts.append(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return parts.isEmpty ? "no OpenSSL error" : parts.joined(separator: "; ")
    }
}
