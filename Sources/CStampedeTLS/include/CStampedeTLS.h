// OpenSSL's macros (SSL_set_mode, SSL_CTX_set_min_proto_version, SSL_set_tlsext_host_name,
// BIO_get_mem_data …) as functions Swift can call. The headers come from the system
// (/usr/include, Debian libssl-dev); the libraries are linked through COpenSSL.
#ifndef C_STAMPEDE_TLS_H
#define C_STAMPEDE_TLS_H

#include <arpa/inet.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

/// Per connection: give idle buffers back (an idle connection holds little memory), and let a
/// write be partial and retried from a moved buffer (the loop's write queue compacts).
static inline long cst_set_connection_modes(SSL *ssl) {
    return SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

/// Two memory BIOs attached to `ssl` (which then owns them): ciphertext from the socket is
/// written into `*rbio`, ciphertext for the socket is read out of `*wbio`. 1 on success.
static inline int cst_attach_memory_bios(SSL *ssl, BIO **rbio, BIO **wbio) {
    BIO *r = BIO_new(BIO_s_mem());
    BIO *w = BIO_new(BIO_s_mem());
    if (r == NULL || w == NULL) { BIO_free(r); BIO_free(w); return 0; }
    // An empty BIO means "no data yet" (retry), never end of file.
    BIO_set_mem_eof_return(r, -1);
    BIO_set_mem_eof_return(w, -1);
    SSL_set_bio(ssl, r, w);
    *rbio = r;
    *wbio = w;
    return 1;
}

/// The bytes a memory BIO has allocated (it keeps its largest size until freed).
static inline size_t cst_bio_capacity(BIO *b) {
    BUF_MEM *m = NULL;
    BIO_get_mem_ptr(b, &m);
    return m == NULL ? 0 : m->max;
}

/// A new empty memory BIO that reads as "retry" when empty, or NULL.
static inline BIO *cst_new_memory_bio(void) {
    BIO *b = BIO_new(BIO_s_mem());
    if (b != NULL) BIO_set_mem_eof_return(b, -1);
    return b;
}

/// Bytes waiting in a memory BIO.
static inline size_t cst_bio_pending(BIO *b) { return BIO_ctrl_pending(b); }

/// The memory BIO's unread bytes, without consuming them.
static inline long cst_bio_peek(BIO *b, const char **data) {
    char *p = NULL;
    long n = BIO_get_mem_data(b, &p);
    *data = p;
    return n;
}

/// Checks the peer's certificate against `name` (an IP literal is matched against the
/// certificate's IP addresses, anything else against its DNS names) and sends it as SNI
/// (RFC 6066 section 3: never an IP literal). 1 on success.
static inline int cst_set_peer_name(SSL *ssl, const char *name) {
    unsigned char ip[16];
    if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1) {
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
    }
    if (SSL_set_tlsext_host_name(ssl, name) != 1) return 0;
    return SSL_set1_host(ssl, name);
}

/// The oldest protocol version either side offers: TLS1_2_VERSION or TLS1_3_VERSION.
static inline int cst_ctx_set_min_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

/// Client session caching for resumption: OpenSSL hands each new session (a TLS 1.3 ticket, or
/// a TLS 1.2 session) to the new-session callback and keeps none itself (the run keeps one per
/// simulated client, see TLSContext.swift).
static inline long cst_ctx_enable_client_session_callback(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}

static inline int cst_ssl_set_app_data(SSL *ssl, void *data) { return SSL_set_app_data(ssl, data); }
static inline void *cst_ssl_get_app_data(const SSL *ssl) { return SSL_get_app_data(ssl); }
static inline int cst_ctx_set_app_data(SSL_CTX *ctx, void *data) { return SSL_CTX_set_app_data(ctx, data); }
static inline void *cst_ctx_get_app_data(const SSL_CTX *ctx) { return SSL_CTX_get_app_data(ctx); }

/// The certificate in a PEM text, or NULL.
static inline X509 *cst_x509_from_pem(const char *pem, int length) {
    BIO *b = BIO_new_mem_buf(pem, length);
    if (b == NULL) return NULL;
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    BIO_free(b);
    return x;
}

static inline int cst_err_reason(unsigned long e) { return ERR_GET_REASON(e); }
static inline int cst_err_lib(unsigned long e) { return ERR_GET_LIB(e); }

/// A fresh EC P-256 key pair (EVP_EC_gen is a macro over a variadic function); NULL on failure.
static inline EVP_PKEY *cst_ec_p256_key(void) { return EVP_EC_gen("P-256"); }

/// Adds `x509` to the server's chain after its own certificate (the context then owns it). 1 on success.
static inline long cst_ctx_add0_chain_cert(SSL_CTX *ctx, X509 *x509) { return SSL_CTX_add0_chain_cert(ctx, x509); }

#endif
