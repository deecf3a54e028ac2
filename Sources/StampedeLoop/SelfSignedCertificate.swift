import COpenSSL
import CStampedeTLS
#if canImport(Glibc)
import Glibc
#endif

/// A throw-away self-signed server certificate made in the process (no `openssl` command, no
/// files), for a reference server that should speak TLS with nothing installed: the embedded
/// target and `stampede serve --tls-self-signed`. A client trusts it by loading
/// `certificatePEM` as its CA file (the certificate is its own issuer).
public struct SelfSignedCertificate: Sendable {
    /// The certificate, PEM ("BEGIN CERTIFICATE").
    public let certificatePEM: String
    /// Its private key, PEM PKCS#8 unencrypted ("BEGIN PRIVATE KEY").
    public let privateKeyPEM: String

    /// EC P-256 key, SHA-256 signature, CN=commonName, subjectAltName DNS names + IP addresses,
    /// basicConstraints CA:FALSE, extendedKeyUsage serverAuth, valid from `startingSecondsFromNow`
    /// (default an hour ago, so clocks a little behind accept it) for `validDays`: a start three
    /// days ago with one valid day makes an expired certificate, for tests of expiry.
    ///
    /// Names must be DNS names (letters, digits, `-`, `.`, `*`, `_`), addresses IPv4 or IPv6
    /// literals, and `validDays` from 1 to 3650; anything else, or an OpenSSL failure, throws.
    public init(commonName: String = "localhost", dnsNames: [String] = ["localhost"], ipAddresses: [String] = ["127.0.0.1", "::1"],
                validDays: Int = 1, startingSecondsFromNow: Int = -3600) throws(TLSSetupError) {
        guard (1...3650).contains(validDays) else { throw TLSSetupError(description: "self-signed certificate: validDays must be from 1 to 3650, got \(validDays)") }
        guard abs(startingSecondsFromNow) <= 3650 * 86_400 else { throw TLSSetupError(description: "self-signed certificate: the start must be within 10 years of now") }
        var names: [String] = []
        for d in dnsNames {
            // The subjectAltName is given to OpenSSL as "DNS:a,IP:b" text: a comma or colon in a
            // name would change its meaning, so only DNS characters pass.
            guard !d.isEmpty, d.utf8.count <= 253, d.utf8.allSatisfy({ Self.isDNSCharacter($0) }) else {
                throw TLSSetupError(description: "self-signed certificate: '\(d)' is not a DNS name")
            }
            names.append("DNS:\(d)")
        }
        for a in ipAddresses {
            var scratch = [UInt8](repeating: 0, count: 16)
            guard inet_pton(AF_INET, a, &scratch) == 1 || inet_pton(AF_INET6, a, &scratch) == 1 else {
                throw TLSSetupError(description: "self-signed certificate: '\(a)' is not an IPv4 or IPv6 address")
            }
            names.append("IP:\(a)")
        }
        guard !names.isEmpty else { throw TLSSetupError(description: "self-signed certificate: no DNS name and no IP address") }

        ERR_clear_error()
        guard let key = cst_ec_p256_key() else { throw Self.failure("EC P-256 key") }
        defer { EVP_PKEY_free(key) }
        guard let cert = X509_new() else { throw Self.failure("X509_new") }
        defer { X509_free(cert) }
        // Version 3 (the value is zero-based), a random positive 63-bit serial (RFC 5280 section 4.1.2.2).
        guard X509_set_version(cert, 2) == 1,
              ASN1_INTEGER_set_uint64(X509_get_serialNumber(cert), UInt64.random(in: 1...UInt64(Int64.max))) == 1,
              X509_gmtime_adj(X509_getm_notBefore(cert), startingSecondsFromNow) != nil,
              X509_gmtime_adj(X509_getm_notAfter(cert), startingSecondsFromNow + validDays * 86_400) != nil,
              X509_set_pubkey(cert, key) == 1 else { throw Self.failure("certificate fields") }
        guard let subject = X509_get_subject_name(cert),
              X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, commonName, -1, -1, 0) == 1,
              X509_set_issuer_name(cert, subject) == 1 else { throw Self.failure("common name '\(commonName)'") }
        var v3 = X509V3_CTX()
        X509V3_set_ctx(&v3, cert, cert, nil, nil, 0)
        // The key identifiers come first: the authority key identifier is read from the subject's
        // (Python's default context verifies strictly, RFC 5280 section 4.2.1.1).
        let extensions: [(Int32, String)] = [
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_alt_name, names.joined(separator: ",")),
        ]
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &v3, nid, value) else { throw Self.failure("extension \(value)") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(cert, ext, -1) == 1 else { throw Self.failure("extension \(value)") }
        }
        guard X509_sign(cert, key, EVP_sha256()) > 0 else { throw Self.failure("signing") }
        certificatePEM = try Self.pem("certificate") { PEM_write_bio_X509($0, cert) }
        privateKeyPEM = try Self.pem("private key") { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    static func isDNSCharacter(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "*"), UInt8(ascii: "_"): true
        default: false
        }
    }

    /// What `write` put into a memory BIO, as text.
    static func pem(_ what: String, _ write: (OpaquePointer) -> Int32) throws(TLSSetupError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw failure("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw failure("writing the \(what)") }
        var data: UnsafePointer<CChar>?
        let n = cst_bio_peek(bio, &data)
        guard n > 0, let data else { throw failure("writing the \(what)") }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: n), as: UTF8.self)
    }

    static func failure(_ step: String) -> TLSSetupError {
        TLSSetupError(description: "self-signed certificate: \(step): \(TLSContext.takeErrors())")
    }
}
