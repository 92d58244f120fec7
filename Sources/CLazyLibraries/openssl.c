// CLazyLibraries: the OpenSSL functions the CTLS shim calls (RTMPS), loaded on first use from
// libssl and libcrypto; see include/CLazyLibraries.h. A failed load's text is what the error
// strings return, so CTLS's messages name the missing library.
#include "lazy.h"

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <stdio.h>

#define LAZY_LIBRARY CLazyLibraries_openssl_library

// The types of the callbacks the BIO_meth_get_* functions return, as the header spells them inline.
typedef int bio_create_function(BIO *);
typedef long bio_ctrl_function(BIO *, int, long, void *);
typedef int bio_destroy_function(BIO *);
typedef int bio_puts_function(BIO *, const char *);
typedef int bio_read_function(BIO *, char *, int);
#define ERROR_TEXT lazy_error(&LAZY_LIBRARY)

#define OPENSSL_FUNCTIONS(X, V, F) \
    V(BIO_clear_flags, (BIO *b, int flags), (b, flags)) \
    X(long, BIO_ctrl, (BIO *bp, int cmd, long larg, void *parg), (bp, cmd, larg, parg), 0) \
    X(long, BIO_int_ctrl, (BIO *bp, int cmd, long larg, int iarg), (bp, cmd, larg, iarg), 0) \
    X(bio_create_function *, BIO_meth_get_create, (const BIO_METHOD *bion), (bion), NULL) \
    X(bio_ctrl_function *, BIO_meth_get_ctrl, (const BIO_METHOD *biom), (biom), NULL) \
    X(bio_destroy_function *, BIO_meth_get_destroy, (const BIO_METHOD *biom), (biom), NULL) \
    X(bio_puts_function *, BIO_meth_get_puts, (const BIO_METHOD *biom), (biom), NULL) \
    X(bio_read_function *, BIO_meth_get_read, (const BIO_METHOD *biom), (biom), NULL) \
    X(BIO_METHOD *, BIO_meth_new, (int type, const char *name), (type, name), NULL) \
    X(int, BIO_meth_set_create, (BIO_METHOD *biom, int (*create)(BIO *)), (biom, create), 0) \
    X(int, BIO_meth_set_ctrl, (BIO_METHOD *biom, long (*ctrl)(BIO *, int, long, void *)), (biom, ctrl), 0) \
    X(int, BIO_meth_set_destroy, (BIO_METHOD *biom, int (*destroy)(BIO *)), (biom, destroy), 0) \
    X(int, BIO_meth_set_puts, (BIO_METHOD *biom, int (*puts)(BIO *, const char *)), (biom, puts), 0) \
    X(int, BIO_meth_set_read, (BIO_METHOD *biom, int (*read)(BIO *, char *, int)), (biom, read), 0) \
    X(int, BIO_meth_set_write, (BIO_METHOD *biom, int (*write)(BIO *, const char *, int)), (biom, write), 0) \
    X(BIO *, BIO_new, (const BIO_METHOD *type), (type), NULL) \
    X(uint64_t, BIO_number_read, (BIO *bio), (bio), 0) \
    X(const BIO_METHOD *, BIO_s_socket, (void), (), NULL) \
    V(BIO_set_flags, (BIO *b, int flags), (b, flags)) \
    X(int, BIO_sock_should_retry, (int i), (i), 0) \
    V(ERR_clear_error, (void), ()) \
    F(ERR_error_string_n, (unsigned long e, char *buf, size_t len), (e, buf, len), \
      if (buf && len > 0) snprintf(buf, len, "%s", ERROR_TEXT)) \
    X(unsigned long, ERR_peek_error, (void), (), 0) \
    X(const char *, OpenSSL_version, (int type), (type), ERROR_TEXT) \
    X(long, SSL_CTX_ctrl, (SSL_CTX *ctx, int cmd, long larg, void *parg), (ctx, cmd, larg, parg), 0) \
    V(SSL_CTX_free, (SSL_CTX *ctx), (ctx)) \
    X(int, SSL_CTX_load_verify_locations, (SSL_CTX *ctx, const char *CAfile, const char *CApath), \
      (ctx, CAfile, CApath), 0) \
    X(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *meth), (meth), NULL) \
    X(int, SSL_CTX_set_default_verify_paths, (SSL_CTX *ctx), (ctx), 0) \
    V(SSL_CTX_set_verify, (SSL_CTX *ctx, int mode, SSL_verify_cb callback), (ctx, mode, callback)) \
    X(int, SSL_connect, (SSL *ssl), (ssl), -1) \
    X(long, SSL_ctrl, (SSL *ssl, int cmd, long larg, void *parg), (ssl, cmd, larg, parg), 0) \
    V(SSL_free, (SSL *ssl), (ssl)) \
    X(X509_VERIFY_PARAM *, SSL_get0_param, (SSL *ssl), (ssl), NULL) \
    X(int, SSL_get_error, (const SSL *s, int ret_code), (s, ret_code), SSL_ERROR_SSL) \
    X(BIO *, SSL_get_rbio, (const SSL *s), (s), NULL) \
    X(long, SSL_get_verify_result, (const SSL *ssl), (ssl), X509_V_ERR_UNSPECIFIED) \
    X(const char *, SSL_get_version, (const SSL *s), (s), "unknown") \
    X(SSL *, SSL_new, (SSL_CTX *ctx), (ctx), NULL) \
    X(int, SSL_read_ex, (SSL *ssl, void *buf, size_t num, size_t *readbytes), (ssl, buf, num, readbytes), 0) \
    X(int, SSL_set1_host, (SSL *s, const char *hostname), (s, hostname), 0) \
    V(SSL_set_bio, (SSL *s, BIO *rbio, BIO *wbio), (s, rbio, wbio)) \
    X(int, SSL_shutdown, (SSL *s), (s), -1) \
    X(int, SSL_write_ex, (SSL *s, const void *buf, size_t num, size_t *written), (s, buf, num, written), 0) \
    X(const SSL_METHOD *, TLS_client_method, (void), (), NULL) \
    X(int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *param, const char *ipasc), (param, ipasc), 0) \
    V(X509_VERIFY_PARAM_set_hostflags, (X509_VERIFY_PARAM *param, unsigned int flags), (param, flags)) \
    X(const char *, X509_verify_cert_error_string, (long n), (n), ERROR_TEXT)

LAZY_TABLE(OPENSSL_FUNCTIONS)

LAZY_LIBRARY_DEFINE(CLazyLibraries_openssl, "libssl3", NULL, 0, "libssl.so.3", "libcrypto.so.3")
