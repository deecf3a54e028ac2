// OpenSSL 3 (Debian libssl-dev), found through pkg-config: the functions the loop's TLS
// streams call directly. Macros Swift cannot import are wrapped in CStampedeTLS.
#ifndef C_OPENSSL_SHIM_H
#define C_OPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#endif
