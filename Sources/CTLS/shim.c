// CTLS: OpenSSL client sessions; see include/CTLS.h for why this shim exists.
#include "CTLS.h"

#include <CLazyLibraries.h>

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CTLS_session {
    SSL_CTX *context;
    SSL *ssl;
};

static void set_detail(char *detail, size_t size, const char *text) {
    if (detail && size > 0) snprintf(detail, size, "%s", text);
}

/// The reason of the first error on OpenSSL's queue, as text, and the queue cleared.
static unsigned long take_openssl_error(char *text, size_t size) {
    unsigned long code = ERR_peek_error();
    if (code != 0) {
        ERR_error_string_n(code, text, size);
    } else if (size > 0) {
        text[0] = 0;
    }
    ERR_clear_error();
    return code;
}

// MARK: A socket BIO that never raises SIGPIPE

// OpenSSL's socket BIO writes with write(2): a peer that closed would kill a process that does
// not ignore SIGPIPE (an SDK cannot decide that for its application). This one sends with
// MSG_NOSIGNAL and otherwise behaves like BIO_s_socket (retry on EAGAIN/EINTR).
static BIO_METHOD *nosignal_method;
static pthread_once_t nosignal_once = PTHREAD_ONCE_INIT;

static int nosignal_write(BIO *bio, const char *bytes, int count) {
    int fd = BIO_get_fd(bio, NULL);
    errno = 0;
    ssize_t sent = send(fd, bytes, (size_t)count, MSG_NOSIGNAL);
    BIO_clear_retry_flags(bio);
    if (sent < 0 && BIO_sock_should_retry((int)sent)) BIO_set_retry_write(bio);
    return (int)sent;
}

static void make_nosignal_method(void) {
    const BIO_METHOD *socket_method = BIO_s_socket();
    nosignal_method = BIO_meth_new(BIO_TYPE_SOCKET, "livepush socket");
    BIO_meth_set_write(nosignal_method, nosignal_write);
    BIO_meth_set_read(nosignal_method, BIO_meth_get_read(socket_method));
    BIO_meth_set_puts(nosignal_method, BIO_meth_get_puts(socket_method));
    BIO_meth_set_ctrl(nosignal_method, BIO_meth_get_ctrl(socket_method));
    BIO_meth_set_create(nosignal_method, BIO_meth_get_create(socket_method));
    BIO_meth_set_destroy(nosignal_method, BIO_meth_get_destroy(socket_method));
}

static BIO *nosignal_bio(int fd) {
    pthread_once(&nosignal_once, make_nosignal_method);
    BIO *bio = BIO_new(nosignal_method);
    if (bio) BIO_set_fd(bio, fd, BIO_NOCLOSE);
    return bio;
}

static int is_ip_literal(const char *host) {
    unsigned char address[16];
    return inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
}

/// Sorts a failed verification into untrusted, name mismatch or expired.
static CTLS_result verification_result(long verify, const char *host, char *detail, size_t size) {
    const char *reason = X509_verify_cert_error_string(verify);
    switch (verify) {
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
        snprintf(detail, size, "the server's certificate is not for '%s' (%s)", host, reason);
        return CTLS_CERT_NAME_MISMATCH;
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        snprintf(detail, size, "the server's certificate is outside its validity dates (%s): check the server's "
                 "certificate and this machine's clock", reason);
        return CTLS_CERT_EXPIRED;
    default:
        snprintf(detail, size, "the server's certificate is not trusted (%s): if the server uses a private CA, "
                 "pass its certificate with --ca-file FILE (config key caFile)", reason);
        return CTLS_CERT_UNTRUSTED;
    }
}

static int is_not_tls_reason(unsigned long code) {
    if (ERR_GET_LIB(code) != ERR_LIB_SSL) return 0;
    int reason = ERR_GET_REASON(code);
    return reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_UNKNOWN_PROTOCOL ||
           reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_HTTP_REQUEST ||
           reason == SSL_R_RECORD_LENGTH_MISMATCH;
}

CTLS_session *CTLS_connect(int fd, const char *host, const char *ca_file, CTLS_result *result,
                           char *detail, size_t detail_size) {
    char text[256];
    *result = CTLS_HANDSHAKE_FAILED;
    const char *missing = CLazyLibraries_check(CLazyLibraries_openssl);  // loaded on first use
    if (missing) {
        snprintf(detail, detail_size, "RTMPS is not available: %s", missing);
        return NULL;
    }
    ERR_clear_error();
    SSL_CTX *context = SSL_CTX_new(TLS_client_method());
    if (!context) {
        take_openssl_error(text, sizeof text);
        snprintf(detail, detail_size, "cannot create a TLS context: %s", text);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(context, SSL_MODE_AUTO_RETRY);
    if (SSL_CTX_set_default_verify_paths(context) != 1) ERR_clear_error();
    if (ca_file && ca_file[0] && SSL_CTX_load_verify_locations(context, ca_file, NULL) != 1) {
        take_openssl_error(text, sizeof text);
        snprintf(detail, detail_size, "cannot read the CA file '%s' as PEM certificates (%s)", ca_file, text);
        *result = CTLS_CA_FILE_UNREADABLE;
        SSL_CTX_free(context);
        return NULL;
    }
    SSL *ssl = SSL_new(context);
    if (!ssl) {
        take_openssl_error(text, sizeof text);
        snprintf(detail, detail_size, "cannot create a TLS session: %s", text);
        SSL_CTX_free(context);
        return NULL;
    }
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    if (is_ip_literal(host)) {
        // No SNI for an address (RFC 6066); the certificate must name the IP in its SANs.
        X509_VERIFY_PARAM_set1_ip_asc(param, host);
    } else {
        SSL_set_tlsext_host_name(ssl, host);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        SSL_set1_host(ssl, host);
    }
    BIO *bio = nosignal_bio(fd);
    if (!bio) {
        snprintf(detail, detail_size, "cannot create a socket BIO");
        SSL_free(ssl);
        SSL_CTX_free(context);
        return NULL;
    }
    SSL_set_bio(ssl, bio, bio);
    int status = SSL_connect(ssl);
    if (status == 1) {
        CTLS_session *session = calloc(1, sizeof *session);
        session->context = context;
        session->ssl = ssl;
        *result = CTLS_OK;
        return session;
    }
    int error = SSL_get_error(ssl, status);
    int saved_errno = errno;
    unsigned long code = take_openssl_error(text, sizeof text);
    long verify = SSL_get_verify_result(ssl);
    unsigned long received = BIO_number_read(SSL_get_rbio(ssl));
    if (verify != X509_V_OK) {
        *result = verification_result(verify, host, detail, detail_size);
    } else if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        if (received == 0) {
            *result = CTLS_NOT_TLS;
            snprintf(detail, detail_size, "the server sent nothing back to the TLS handshake in time: it is probably "
                     "a plain RTMP server (use rtmp:// and its port) or not an ingest server");
        } else {
            *result = CTLS_TIMED_OUT;
            snprintf(detail, detail_size, "the TLS handshake did not finish in time");
        }
    } else if (error == SSL_ERROR_SSL && is_not_tls_reason(code)) {
        *result = CTLS_NOT_TLS;
        snprintf(detail, detail_size, "the server does not speak TLS (%s): it is probably a plain RTMP server "
                 "(use rtmp:// and its port)", text);
    } else if (error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && saved_errno == 0)) {
        *result = received == 0 ? CTLS_NOT_TLS : CTLS_HANDSHAKE_FAILED;
        snprintf(detail, detail_size, received == 0
                 ? "the server closed the connection at the TLS ClientHello: it does not speak TLS on this port"
                 : "the server closed the connection during the TLS handshake");
    } else if (error == SSL_ERROR_SYSCALL) {
        *result = CTLS_IO_FAILED;
        snprintf(detail, detail_size, "the TLS handshake broke: %s", strerror(saved_errno));
    } else {
        *result = CTLS_HANDSHAKE_FAILED;
        snprintf(detail, detail_size, "the TLS handshake failed (%s)", text[0] ? text : "no reason given");
    }
    SSL_free(ssl);
    SSL_CTX_free(context);
    return NULL;
}

/// Sorts a failed SSL_read or SSL_write.
static CTLS_result io_result(CTLS_session *session, int status, const char *what, char *detail, size_t size) {
    char text[256];
    int error = SSL_get_error(session->ssl, status);
    int saved_errno = errno;
    take_openssl_error(text, sizeof text);
    switch (error) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        snprintf(detail, size, "%s timed out", what);
        return CTLS_TIMED_OUT;
    case SSL_ERROR_ZERO_RETURN:
        snprintf(detail, size, "the server closed the TLS connection");
        return CTLS_CLOSED;
    case SSL_ERROR_SYSCALL:
        if (saved_errno == 0) {
            snprintf(detail, size, "the server closed the connection");
            return CTLS_CLOSED;
        }
        snprintf(detail, size, "%s failed: %s", what, strerror(saved_errno));
        return CTLS_IO_FAILED;
    default:
        snprintf(detail, size, "%s failed: %s", what, text[0] ? text : "TLS error");
        return CTLS_IO_FAILED;
    }
}

CTLS_result CTLS_write(CTLS_session *session, const void *bytes, size_t count, char *detail, size_t detail_size) {
    size_t written = 0;
    ERR_clear_error();
    while (written < count) {
        size_t chunk = 0;
        int status = SSL_write_ex(session->ssl, (const char *)bytes + written, count - written, &chunk);
        if (status != 1) return io_result(session, 0, "sending", detail, detail_size);
        written += chunk;
    }
    return CTLS_OK;
}

CTLS_result CTLS_read(CTLS_session *session, void *buffer, size_t capacity, size_t *received, char *detail,
                      size_t detail_size) {
    ERR_clear_error();
    *received = 0;
    int status = SSL_read_ex(session->ssl, buffer, capacity, received);
    if (status == 1) return CTLS_OK;
    return io_result(session, 0, "receiving", detail, detail_size);
}

const char *CTLS_protocol(const CTLS_session *session) { return SSL_get_version(session->ssl); }

void CTLS_free(CTLS_session *session) {
    if (!session) return;
    SSL_shutdown(session->ssl);
    SSL_free(session->ssl);
    SSL_CTX_free(session->context);
    free(session);
}

const char *CTLS_library_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
