// CLinuxShim: Linux calls and constants that Swift's Glibc module does not expose.
//
// Why each one is here:
// - memfd_create, F_ADD_SEALS and F_SEAL_*: declared by glibc only under _GNU_SOURCE, which
//   Swift's Glibc module is not built with. The pusher creates and seals the frame ring.
// - fcntl with an int argument: fcntl is variadic, and Swift cannot call variadic C functions.
// - eventfd: wake-ups between threads.
// - CMSG_*: macros, which Swift cannot import; needed to pass descriptors with SCM_RIGHTS.
// - SO_PEERCRED / struct ucred: _GNU_SOURCE only; the pusher checks its peer's uid.
// - futex: a raw syscall (variadic syscall()); waiting on a word in shared memory.
//
// Every symbol carries the CLinuxShim_ prefix; macros are re-exported as constants.
#ifndef LIVEPUSH_CLINUXSHIM_H
#define LIVEPUSH_CLINUXSHIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <time.h>

// MARK: memfd and seals

extern const unsigned int CLinuxShim_MFD_CLOEXEC;
extern const unsigned int CLinuxShim_MFD_ALLOW_SEALING;
extern const int CLinuxShim_F_ADD_SEALS;
extern const int CLinuxShim_F_GET_SEALS;
extern const int CLinuxShim_F_SEAL_SEAL;
extern const int CLinuxShim_F_SEAL_SHRINK;
extern const int CLinuxShim_F_SEAL_GROW;
extern const int CLinuxShim_F_SEAL_WRITE;

/// memfd_create(2): returns a descriptor, or -1 with errno set.
int CLinuxShim_memfd_create(const char *name, unsigned int flags);

/// fcntl(2) with an int argument (F_ADD_SEALS, F_SETFL, ...) or none (F_GET_SEALS, F_GETFL).
int CLinuxShim_fcntl_int(int fd, int command, int argument);

// MARK: eventfd

extern const int CLinuxShim_EFD_CLOEXEC;
extern const int CLinuxShim_EFD_NONBLOCK;
extern const int CLinuxShim_EFD_SEMAPHORE;

/// eventfd(2): returns a descriptor, or -1 with errno set.
int CLinuxShim_eventfd(unsigned int initialValue, int flags);

// MARK: control messages (SCM_RIGHTS)

struct cmsghdr *CLinuxShim_CMSG_FIRSTHDR(const struct msghdr *message);
struct cmsghdr *CLinuxShim_CMSG_NXTHDR(struct msghdr *message, struct cmsghdr *header);
unsigned char *CLinuxShim_CMSG_DATA(struct cmsghdr *header);
size_t CLinuxShim_CMSG_SPACE(size_t payloadBytes);
size_t CLinuxShim_CMSG_LEN(size_t payloadBytes);

// MARK: accept4

/// accept4(2) with SOCK_CLOEXEC, without the peer's address (declared under _GNU_SOURCE only).
int CLinuxShim_accept_cloexec(int listeningFd);

// MARK: peer credentials

/// getsockopt(SO_PEERCRED) on a connected Unix socket: 0 on success, -1 with errno set.
int CLinuxShim_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

// MARK: futex

/// FUTEX_WAIT on a 32-bit word shared between processes (no FUTEX_PRIVATE_FLAG).
/// `timeout` is relative; NULL waits forever. Returns 0 when woken, -1 with errno
/// (EAGAIN: the word was not `expected`; ETIMEDOUT; EINTR).
int CLinuxShim_futex_wait(uint32_t *word, uint32_t expected, const struct timespec *timeout);

/// FUTEX_WAKE: wakes up to `count` waiters; returns how many were woken, or -1 with errno.
int CLinuxShim_futex_wake(uint32_t *word, int count);

// prctl(PR_SET_THP_DISABLE, 1): no transparent huge pages for this process (prctl is variadic).
// libx264 asks for huge pages (MADV_HUGEPAGE) on its frame buffers, which rounds each up to 2 MiB
// pages that are resident whole: about 7 MiB at 1080p. Returns 0 or -1 with errno.
int CLinuxShim_disable_transparent_hugepages(void);

// prctl(PR_SET_DUMPABLE, on) and PR_GET_DUMPABLE (issue 30): while a stream key is in memory the
// pusher is not dumpable, so no core file holds it and no other process of its user can ptrace it
// or read its /proc/PID/mem and environ. Set: 0 or -1 with errno; get: 0, 1 (or 2), or -1.
int CLinuxShim_set_dumpable(int on);
int CLinuxShim_get_dumpable(void);

// prctl(PR_SET_NAME, name): names the calling thread as top -H, gdb and /proc/PID/task/TID/comm show
// it; the kernel keeps 15 bytes. Returns 0 or -1 with errno.
int CLinuxShim_set_thread_name(const char *name);

// MARK: UTC timestamps

/// `seconds` since the epoch plus `milliseconds` as "YYYY-MM-DDTHH:MM:SS.mmmZ" (ISO 8601, UTC) into
/// `out` (gmtime_r + snprintf: no allocation, no ICU). Returns the length (24) or -1 when `size` is
/// too small or the time cannot be broken down.
int CLinuxShim_format_utc_ms(char *out, size_t size, int64_t seconds, int milliseconds);

#endif
