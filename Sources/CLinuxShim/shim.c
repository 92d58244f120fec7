// Implementations of CLinuxShim.h; built with _GNU_SOURCE (see Package.swift).
#include "CLinuxShim.h"

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

const unsigned int CLinuxShim_MFD_CLOEXEC = MFD_CLOEXEC;
const unsigned int CLinuxShim_MFD_ALLOW_SEALING = MFD_ALLOW_SEALING;
const int CLinuxShim_F_ADD_SEALS = F_ADD_SEALS;
const int CLinuxShim_F_GET_SEALS = F_GET_SEALS;
const int CLinuxShim_F_SEAL_SEAL = F_SEAL_SEAL;
const int CLinuxShim_F_SEAL_SHRINK = F_SEAL_SHRINK;
const int CLinuxShim_F_SEAL_GROW = F_SEAL_GROW;
const int CLinuxShim_F_SEAL_WRITE = F_SEAL_WRITE;

int CLinuxShim_memfd_create(const char *name, unsigned int flags) {
    return memfd_create(name, flags);
}

int CLinuxShim_fcntl_int(int fd, int command, int argument) {
    return fcntl(fd, command, argument);
}

const int CLinuxShim_EFD_CLOEXEC = EFD_CLOEXEC;
const int CLinuxShim_EFD_NONBLOCK = EFD_NONBLOCK;
const int CLinuxShim_EFD_SEMAPHORE = EFD_SEMAPHORE;

int CLinuxShim_eventfd(unsigned int initialValue, int flags) {
    return eventfd(initialValue, flags);
}

struct cmsghdr *CLinuxShim_CMSG_FIRSTHDR(const struct msghdr *message) {
    return CMSG_FIRSTHDR(message);
}

struct cmsghdr *CLinuxShim_CMSG_NXTHDR(struct msghdr *message, struct cmsghdr *header) {
    return CMSG_NXTHDR(message, header);
}

unsigned char *CLinuxShim_CMSG_DATA(struct cmsghdr *header) {
    return CMSG_DATA(header);
}

size_t CLinuxShim_CMSG_SPACE(size_t payloadBytes) {
    return CMSG_SPACE(payloadBytes);
}

size_t CLinuxShim_CMSG_LEN(size_t payloadBytes) {
    return CMSG_LEN(payloadBytes);
}

int CLinuxShim_accept_cloexec(int listeningFd) {
    return accept4(listeningFd, NULL, NULL, SOCK_CLOEXEC);
}

int CLinuxShim_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) {
        return -1;
    }
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int CLinuxShim_futex_wait(uint32_t *word, uint32_t expected, const struct timespec *timeout) {
    return (int)syscall(SYS_futex, word, FUTEX_WAIT, expected, timeout, NULL, 0);
}

int CLinuxShim_disable_transparent_hugepages(void) {
    return prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
}

int CLinuxShim_set_dumpable(int on) { return prctl(PR_SET_DUMPABLE, on ? 1 : 0, 0, 0, 0); }

int CLinuxShim_get_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

int CLinuxShim_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

int CLinuxShim_futex_wake(uint32_t *word, int count) {
    return (int)syscall(SYS_futex, word, FUTEX_WAKE, count, NULL, NULL, 0);
}

int CLinuxShim_format_utc_ms(char *out, size_t size, int64_t seconds, int milliseconds) {
    time_t when = (time_t)seconds;
    struct tm parts;
    if (gmtime_r(&when, &parts) == NULL || milliseconds < 0 || milliseconds > 999) return -1;
    int length = snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1,
                          parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, milliseconds);
    return length < 0 || (size_t)length >= size ? -1 : length;
}
