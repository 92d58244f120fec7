// CLazyLibraries: the loader; see include/CLazyLibraries.h for why this target exists.
#include "lazy.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct lazy_library *library_for(CLazyLibraries_library id) {
    switch (id) {
    case CLazyLibraries_avformat: return &CLazyLibraries_avformat_library;
    case CLazyLibraries_swscale: return &CLazyLibraries_swscale_library;
    case CLazyLibraries_srt: return &CLazyLibraries_srt_library;
    case CLazyLibraries_openssl: return &CLazyLibraries_openssl_library;
    case CLazyLibraries_microhttpd: return &CLazyLibraries_microhttpd_library;
    }
    return NULL;
}

/// Opens the library's files and resolves every symbol; sets `loaded`, or `error` with the first failure.
static void load(struct lazy_library *library) {
    void *handles[3] = {NULL, NULL, NULL};
    for (size_t index = 0; index < 3 && library->files[index]; index++) {
        // RTLD_LOCAL: the library's symbols serve only our pointers, never another library's lookups.
        handles[index] = dlopen(library->files[index], RTLD_NOW | RTLD_LOCAL);
        if (!handles[index]) {
            const char *reason = dlerror();
            snprintf(library->error_text, sizeof library->error_text,
                     "%s could not be loaded (%s); install the Debian package %s",
                     library->files[index], reason ? reason : "no reason given", library->package);
            library->error = library->error_text;
            return;
        }
    }
    for (size_t index = 0; index < library->symbol_count + library->more_symbol_count; index++) {
        const struct lazy_symbol *symbol = index < library->symbol_count
            ? &library->symbols[index] : &library->more_symbols[index - library->symbol_count];
        void *address = NULL;
        for (size_t file = 0; file < 3 && handles[file] && !address; file++) {
            address = dlsym(handles[file], symbol->name);
        }
        if (!address) {
            snprintf(library->error_text, sizeof library->error_text,
                     "%s has no function %s (a different version?); install the Debian package %s",
                     library->files[0], symbol->name, library->package);
            library->error = library->error_text;
            return;
        }
        *symbol->slot = address;
    }
    __atomic_store_n(&library->loaded, 1, __ATOMIC_RELEASE);
}

// pthread_once takes no argument: one trampoline per library.
static void load_avformat(void) { load(&CLazyLibraries_avformat_library); }
static void load_swscale(void) { load(&CLazyLibraries_swscale_library); }
static void load_srt(void) { load(&CLazyLibraries_srt_library); }
static void load_openssl(void) { load(&CLazyLibraries_openssl_library); }
static void load_microhttpd(void) { load(&CLazyLibraries_microhttpd_library); }

static void (*loader_for(CLazyLibraries_library id))(void) {
    switch (id) {
    case CLazyLibraries_avformat: return load_avformat;
    case CLazyLibraries_swscale: return load_swscale;
    case CLazyLibraries_srt: return load_srt;
    case CLazyLibraries_openssl: return load_openssl;
    case CLazyLibraries_microhttpd: return load_microhttpd;
    }
    return NULL;
}

int lazy_ready(struct lazy_library *library) {
    if (__atomic_load_n(&library->loaded, __ATOMIC_ACQUIRE)) return 1;
    pthread_once(&library->once, loader_for(library->id));
    if (__atomic_load_n(&library->loaded, __ATOMIC_ACQUIRE)) return 1;
    if (!__atomic_exchange_n(&library->reported, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "livepush: %s\n", library->error);
    }
    return 0;
}

const char *lazy_error(struct lazy_library *library) {
    return library->error ? library->error : "";
}

const char *CLazyLibraries_check(CLazyLibraries_library id) {
    struct lazy_library *library = library_for(id);
    if (!library) return "CLazyLibraries_check: unknown library";
    pthread_once(&library->once, loader_for(id));
    return __atomic_load_n(&library->loaded, __ATOMIC_ACQUIRE) ? NULL : library->error;
}

int CLazyLibraries_is_loaded(CLazyLibraries_library id) {
    struct lazy_library *library = library_for(id);
    return library && __atomic_load_n(&library->loaded, __ATOMIC_ACQUIRE);
}

const char *CLazyLibraries_file_name(CLazyLibraries_library id) {
    struct lazy_library *library = library_for(id);
    return library ? library->files[0] : "?";
}

char *CLazyLibraries_probe(const char *file, const char *package, const char *symbol) {
    void *address = NULL;
    const struct lazy_symbol symbols[] = {{symbol, &address}};
    struct lazy_library library = {
        .files = {file}, .package = package, .symbols = symbols, .symbol_count = 1, .once = PTHREAD_ONCE_INIT,
    };
    load(&library);
    return library.loaded ? NULL : strdup(library.error);
}
