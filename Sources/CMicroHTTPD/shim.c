#include "CMicroHTTPD.h"

#include <CLazyLibraries.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

struct MHD_Daemon *CMicroHTTPD_start(const char *ipv4, uint16_t port, unsigned int timeout_s,
                                     unsigned int max_connections, unsigned int max_per_address,
                                     MHD_AccessHandlerCallback handler, MHD_RequestCompletedCallback completed,
                                     void *context) {
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    if (inet_pton(AF_INET, ipv4, &address.sin_addr) != 1) {
        errno = EINVAL;
        return NULL;
    }
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL,
                            port, NULL, NULL, handler, context,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, context,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
                            MHD_OPTION_CONNECTION_LIMIT, max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, max_per_address,
                            MHD_OPTION_END);
}

uint16_t CMicroHTTPD_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

uint64_t CMicroHTTPD_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

ssize_t CMicroHTTPD_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }

const char *CMicroHTTPD_library_missing(void) { return CLazyLibraries_check(CLazyLibraries_microhttpd); }
