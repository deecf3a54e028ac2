import COpenSSL
import CStampedeTLS

/// What a client TLS context does: the scenario's `tls:` block, checked.
public struct TLSClientConfiguration: Sendable, Equatable {
    public enum Version: String, Sendable, CaseIterable { case tls12 = "1.2", tls13 = "1.3" }
    /// Trusted CAs (PEM); nil: the system store.
    public var caFile: String? = nil
    /// A certificate trusted in place of `caFile` (the embedded target's throw-away certificate).
    public var trustedCertificatePEM: String? = nil
    /// false: any certificate is accepted (no chain or name check).
    public var verify = true
    /// The name sent as SNI and checked against the certificate (an IP literal is checked against
    /// its IP addresses and not sent); nil: no name check.
    public var serverName: String? = nil
    /// Mutual TLS: the client's certificate chain and key (PEM files).
    public var certificateFile: String? = nil
    public var keyFile: String? = nil
    public var minVersion: Version = .tls12
    /// ALPN protocols offered, in order of preference.
    public var alpn: [String] = []
    /// Keeps each session the server gives a client (TLS 1.3 tickets, TLS 1.2 tickets or ids) so
    /// the client's next connection can resume it (`TLSSessionReuse`).
    public var sessionTickets = false
    public init() {}
}

/// Whether one connection's handshake tries to resume, and under which key its session is kept.
/// Keys are the caller's (a simulated client's index): every connection of a client shares one.
public enum TLSSessionReuse: Sendable, Equatable {
    /// A full handshake; nothing kept.
    case none
    /// A full handshake; the session it yields is kept under `key`.
    case keep(key: Int)
    /// Offers the session kept under `key` (a full handshake when there is none, or when the
    /// server declines it); the session this connection yields replaces it.
    case resume(key: Int)
}

/// How a connection's handshake went, for the run's metrics.
public struct TLSHandshakeResult: Sendable, Equatable {
    /// From the TCP connection being established to the handshake being done.
    public var durationNs: UInt64
    /// Whether it resumed an earlier session (no certificate exchange).
    public var resumed: Bool
}

extension TLSContext {
    func configureClient(_ c: TLSClientConfiguration) throws(TLSSetupError) {
        _ = cst_ctx_set_min_version(ctx, c.minVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION)
        if !c.verify {
            SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nil)
        } else if let pem = c.trustedCertificatePEM {
            guard let x = pem.withCString({ cst_x509_from_pem($0, Int32(pem.utf8.count)) }) else {
                throw TLSSetupError(description: "trusted certificate: \(Self.takeErrors())")
            }
            defer { X509_free(x) }
            guard X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), x) == 1 else {
                throw TLSSetupError(description: "trusted certificate: \(Self.takeErrors())")
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        } else {
            let ok = c.caFile.map { SSL_CTX_load_verify_locations(ctx, $0, nil) } ?? SSL_CTX_set_default_verify_paths(ctx)
            guard ok == 1 else { throw TLSSetupError(description: "CA \(c.caFile ?? "system store"): \(Self.takeErrors())") }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        }
        if let certificate = c.certificateFile {
            guard SSL_CTX_use_certificate_chain_file(ctx, certificate) == 1 else {
                throw TLSSetupError(description: "client certificate \(certificate): \(Self.takeErrors())")
            }
            let key = c.keyFile ?? certificate
            guard SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
                throw TLSSetupError(description: "client key \(key): \(Self.takeErrors())")
            }
        }
        if !c.alpn.isEmpty {
            // RFC 7301 section 3.1: each protocol name preceded by its one-byte length.
            var wire: [UInt8] = []
            for name in c.alpn {
                guard (1...255).contains(name.utf8.count) else { throw TLSSetupError(description: "ALPN protocol '\(name)': 1 to 255 bytes") }
                wire.append(UInt8(name.utf8.count)); wire += name.utf8
            }
            // SSL_CTX_set_alpn_protos returns 0 on success.
            guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else {
                throw TLSSetupError(description: "ALPN: \(Self.takeErrors())")
            }
        }
        if c.sessionTickets {
            _ = cst_ctx_enable_client_session_callback(ctx)
            // Unretained: every SSL made from the context holds the context, so it outlives them.
            _ = cst_ctx_set_app_data(ctx, Unmanaged.passUnretained(self).toOpaque())
            SSL_CTX_sess_set_new_cb(ctx, { ssl, session in
                guard let ssl, let session, let ctx = SSL_get_SSL_CTX(ssl), let owner = cst_ctx_get_app_data(ctx) else { return 0 }
                let key = Int(bitPattern: cst_ssl_get_app_data(ssl)) - 1
                guard key >= 0 else { return 0 }
                Unmanaged<TLSContext>.fromOpaque(owner).takeUnretainedValue().keep(session, for: key)
                return 0  // a copy is kept; OpenSSL keeps its own reference
            })
        }
    }

    /// Keeps a copy of `session` as `key`'s newest.
    /// A copy, because OpenSSL marks a connection's own session not resumable when the
    /// connection ends without close_notify (a reset, a lost network), which a browser's kept
    /// ticket survives.
    func keep(_ session: OpaquePointer, for key: Int) {
        guard let copy = SSL_SESSION_dup(session) else { return }
        let kept = KeptSession(pointer: copy)
        let old = sessions.withLock { $0.updateValue(kept, forKey: key) }
        if let old { SSL_SESSION_free(old.pointer) }
    }

    /// Prepares `ssl` for `reuse`: remembers the key, and offers the kept session when resuming.
    func prepare(_ ssl: OpaquePointer, for reuse: TLSSessionReuse) {
        switch reuse {
        case .none: return
        case .keep(let key):
            _ = cst_ssl_set_app_data(ssl, UnsafeMutableRawPointer(bitPattern: key + 1))
        case .resume(let key):
            _ = cst_ssl_set_app_data(ssl, UnsafeMutableRawPointer(bitPattern: key + 1))
            // A reference taken under the lock, so `keep` cannot free the session in between.
            let kept = sessions.withLock { s -> KeptSession? in
                guard let k = s[key] else { return nil }
                _ = SSL_SESSION_up_ref(k.pointer)
                return k
            }
            if let kept {
                _ = SSL_set_session(ssl, kept.pointer)
                SSL_SESSION_free(kept.pointer)  // SSL_set_session took its own reference
            }
        }
    }

    /// Sessions kept for resumption (for tests and memory figures).
    public var keptSessions: Int { sessions.withLock { $0.count } }
}
