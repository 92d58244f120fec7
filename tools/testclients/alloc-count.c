// alloc-count: an LD_PRELOAD shim that counts heap allocations, for `livepush-bench alloc`.
//
//   cc -std=gnu11 -O2 -shared -fPIC tools/testclients/alloc-count.c -o .build/alloc-count.so
//   LIVEPUSH_ALLOC_COUNT_DIR=/tmp/x LD_PRELOAD=.build/alloc-count.so livepush push ...
//
// Every process that loads it (the pusher and the helper it starts, which inherits the
// environment) writes its counters into DIR/PID.count, a 64-byte file mapped shared: the
// benchmark reads them from outside while the process runs, twice, and divides the difference
// by the time between. Counted: malloc, calloc, realloc (as one allocation of its new size),
// posix_memalign, aligned_alloc, memalign, valloc; free is counted apart. The real work is done
// by glibc's own __libc_* entry points, so no dlsym (which itself allocates) is needed.
//
// The file holds four little-endian uint64: magic "LPALLOC1", allocations, bytes asked, frees.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

struct counters {
    uint64_t magic;
    _Atomic uint64_t allocations;
    _Atomic uint64_t bytes;
    _Atomic uint64_t frees;
};

// Until the constructor has mapped the file, counts go here (and are carried over).
static struct counters early_counters;
static struct counters *counters = &early_counters;

static inline void count_allocation(size_t size) {
    atomic_fetch_add_explicit(&counters->allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&counters->bytes, size, memory_order_relaxed);
}

__attribute__((constructor)) static void alloc_count_start(void) {
    const char *directory = getenv("LIVEPUSH_ALLOC_COUNT_DIR");
    if (directory == NULL || directory[0] == 0) return;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%d.count", directory, (int)getpid()) >= (int)sizeof path) return;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    if (ftruncate(fd, 64) != 0) {
        close(fd);
        return;
    }
    void *mapping = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (mapping == MAP_FAILED) return;
    struct counters *mapped = mapping;
    atomic_store(&mapped->allocations, atomic_load(&early_counters.allocations));
    atomic_store(&mapped->bytes, atomic_load(&early_counters.bytes));
    atomic_store(&mapped->frees, atomic_load(&early_counters.frees));
    memcpy(&mapped->magic, "LPALLOC1", 8);
    counters = mapped;
}

void *malloc(size_t size) {
    count_allocation(size);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_allocation(count * size);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_allocation(size);
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    if (pointer != NULL) atomic_fetch_add_explicit(&counters->frees, 1, memory_order_relaxed);
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) {
    count_allocation(size);
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_allocation(size);
    return __libc_memalign(alignment, size);
}

void *valloc(size_t size) {
    count_allocation(size);
    return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count_allocation(size);
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}
