// libmicrohttpd (Debian's libmicrohttpd-dev) for the HTTPServer module. MHD_start_daemon is
// variadic and its sizes and results are macros, which Swift cannot call or import: these
// shims wrap them. Only HTTPServer imports this module.
#ifndef LIVEPUSH_CMICROHTTPD_H
#define LIVEPUSH_CMICROHTTPD_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <microhttpd.h>

/// Starts a daemon with one thread per connection on `ipv4:port` (port 0: any free port): a
/// connection idle for `timeout_s` seconds is closed, at most `max_connections` in all and
/// `max_per_address` from one client address are served (MHD_OPTION_CONNECTION_TIMEOUT,
/// _CONNECTION_LIMIT, _PER_IP_CONNECTION_LIMIT). NULL on failure (a bad address, the port in
/// use), with errno set when the system said why.
struct MHD_Daemon *CMicroHTTPD_start(const char *ipv4, uint16_t port, unsigned int timeout_s,
                                     unsigned int max_connections, unsigned int max_per_address,
                                     MHD_AccessHandlerCallback handler, MHD_RequestCompletedCallback completed,
                                     void *context);

/// The port the daemon is bound to (what port 0 became).
uint16_t CMicroHTTPD_bound_port(struct MHD_Daemon *daemon);

/// NULL when libmicrohttpd (loaded on first use, CLazyLibraries) is there; else why not, naming the Debian package.
const char *CMicroHTTPD_library_missing(void);

/// MHD_SIZE_UNKNOWN and MHD_CONTENT_READER_END_OF_STREAM.
uint64_t CMicroHTTPD_size_unknown(void);
ssize_t CMicroHTTPD_end_of_stream(void);
#endif
