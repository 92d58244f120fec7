// CLazyLibraries: the libmicrohttpd functions the CMicroHTTPD shim calls (the dashboard), loaded on
// first use; see include/CLazyLibraries.h. Its two variadic functions are written out below.
#include "lazy.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <microhttpd.h>

#define LAZY_LIBRARY CLazyLibraries_microhttpd_library

#define MICROHTTPD_FUNCTIONS(X, V, F) \
    X(enum MHD_Result, MHD_add_response_header, (struct MHD_Response *response, const char *header, \
        const char *content), (response, header, content), MHD_NO) \
    X(struct MHD_Response *, MHD_create_response_from_buffer, (size_t size, void *buffer, \
        enum MHD_ResponseMemoryMode mode), (size, buffer, mode), NULL) \
    X(struct MHD_Response *, MHD_create_response_from_callback, (uint64_t size, size_t block_size, \
        MHD_ContentReaderCallback crc, void *crc_cls, MHD_ContentReaderFreeCallback crfc), \
      (size, block_size, crc, crc_cls, crfc), NULL) \
    V(MHD_destroy_response, (struct MHD_Response *response), (response)) \
    X(int, MHD_get_connection_values, (struct MHD_Connection *connection, enum MHD_ValueKind kind, \
        MHD_KeyValueIterator iterator, void *iterator_cls), (connection, kind, iterator, iterator_cls), 0) \
    X(enum MHD_Result, MHD_queue_response, (struct MHD_Connection *connection, unsigned int status_code, \
        struct MHD_Response *response), (connection, status_code, response), MHD_NO) \
    V(MHD_stop_daemon, (struct MHD_Daemon *daemon), (daemon))

LAZY_TABLE(MICROHTTPD_FUNCTIONS)

static struct MHD_Daemon *(*lazy_MHD_start_daemon_va)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                                      void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls,
                                                      va_list ap);
static const union MHD_DaemonInfo *(*lazy_MHD_get_daemon_info)(struct MHD_Daemon *daemon,
                                                               enum MHD_DaemonInfoType info_type, ...);

static const struct lazy_symbol variadic_symbols[] = {
    {"MHD_start_daemon_va", (void **)&lazy_MHD_start_daemon_va},
    {"MHD_get_daemon_info", (void **)&lazy_MHD_get_daemon_info},
};

/// MHD_start_daemon's options go through MHD_start_daemon_va, which takes them as a va_list.
struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...) {
    if (!lazy_ready(&LAZY_LIBRARY)) return NULL;
    va_list options;
    va_start(options, dh_cls);
    struct MHD_Daemon *daemon = lazy_MHD_start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, options);
    va_end(options);
    return daemon;
}

/// Forwards no variadic argument: the information types LivePush asks for (the bound port) take none.
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon, enum MHD_DaemonInfoType info_type, ...) {
    if (!lazy_ready(&LAZY_LIBRARY)) return NULL;
    return lazy_MHD_get_daemon_info(daemon, info_type);
}

LAZY_LIBRARY_DEFINE(CLazyLibraries_microhttpd, "libmicrohttpd12", variadic_symbols,
                    sizeof variadic_symbols / sizeof variadic_symbols[0], "libmicrohttpd.so.12")
