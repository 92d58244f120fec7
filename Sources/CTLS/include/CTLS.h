// CTLS: a TLS 1.2/1.3 client over a connected socket, with OpenSSL's libssl.
//
// Why this shim exists: OpenSSL's API is macros (SSL_set_tlsext_host_name, ERR_GET_REASON) and
// pointers to opaque structs that Swift should not hold; this file is the only place that sees
// them. Swift (module Transport) gets an opaque session, plain ints and a message to read.
// OpenSSL rather than GnuTLS: the test TLS front (Debian's nginx) and the `openssl` tool that
// makes the test certificates are the same library, and X509_VERIFY_PARAM gives the host-name
// and IP checks in two calls (docs/architecture.md says more).
//
// Every symbol carries the CTLS_ prefix.
#ifndef LIVEPUSH_CTLS_H
#define LIVEPUSH_CTLS_H

#include <stddef.h>

/// What a call ended with. Never 0-valued for a failure.
typedef enum {
    CTLS_OK = 0,
    /// The certificate chain does not lead to a trusted CA (system store plus the CA file).
    CTLS_CERT_UNTRUSTED = 1,
    /// The certificate is valid but not for the host name (or IP address) that was asked for.
    CTLS_CERT_NAME_MISMATCH = 2,
    /// The certificate (or one in its chain) has expired or is not valid yet.
    CTLS_CERT_EXPIRED = 3,
    /// The server does not speak TLS (it answered something else, or nothing at all).
    CTLS_NOT_TLS = 4,
    /// The TLS handshake failed for another reason (protocol version, ciphers, an alert).
    CTLS_HANDSHAKE_FAILED = 5,
    /// A read or write did not finish within the socket's timeout.
    CTLS_TIMED_OUT = 6,
    /// The peer closed the connection.
    CTLS_CLOSED = 7,
    /// The connection broke (errno in the message).
    CTLS_IO_FAILED = 8,
    /// The CA file given could not be read as PEM certificates.
    CTLS_CA_FILE_UNREADABLE = 9,
} CTLS_result;

typedef struct CTLS_session CTLS_session;

/// Shakes hands over `fd` (connected, blocking, with SO_RCVTIMEO/SO_SNDTIMEO set) with SNI and
/// a host-name (or IP) check against the system CA store and `ca_file` (may be NULL). Returns a
/// session, or NULL with `*result` set and a message in `detail`. `fd` stays the caller's.
CTLS_session *CTLS_connect(int fd, const char *host, const char *ca_file, CTLS_result *result,
                           char *detail, size_t detail_size);

/// Writes all `count` bytes. Returns CTLS_OK or a failure with a message in `detail`.
CTLS_result CTLS_write(CTLS_session *session, const void *bytes, size_t count, char *detail,
                       size_t detail_size);

/// Reads up to `capacity` bytes; `*received` gets how many (at least 1 on CTLS_OK).
CTLS_result CTLS_read(CTLS_session *session, void *buffer, size_t capacity, size_t *received,
                      char *detail, size_t detail_size);

/// The negotiated protocol ("TLSv1.3").
const char *CTLS_protocol(const CTLS_session *session);

/// Sends close_notify (best effort) and frees the session; the socket stays open.
void CTLS_free(CTLS_session *session);

/// The OpenSSL version in use ("OpenSSL 3.0.19 ...").
const char *CTLS_library_version(void);

#endif
