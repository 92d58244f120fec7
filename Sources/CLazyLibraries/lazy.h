// The loader shared by the per-library files of CLazyLibraries (not part of its public header).
#ifndef LIVEPUSH_CLAZYLIBRARIES_LAZY_H
#define LIVEPUSH_CLAZYLIBRARIES_LAZY_H
#include "CLazyLibraries.h"

#include <pthread.h>
#include <stddef.h>

struct lazy_symbol {
    const char *name;
    void **slot;
};

/// One library: the files to open (the first is the one that matters; more are its companions,
/// e.g. libcrypto beside libssl), the Debian package, and the symbols to resolve.
struct lazy_library {
    CLazyLibraries_library id;
    const char *files[3];
    const char *package;
    const struct lazy_symbol *symbols;
    size_t symbol_count;
    const struct lazy_symbol *more_symbols; // those written out by hand (variadic functions), or NULL
    size_t more_symbol_count;
    pthread_once_t once;
    int loaded;
    int reported;
    const char *error;
    char error_text[512];
};

extern struct lazy_library CLazyLibraries_avformat_library;
extern struct lazy_library CLazyLibraries_swscale_library;
extern struct lazy_library CLazyLibraries_srt_library;
extern struct lazy_library CLazyLibraries_openssl_library;
extern struct lazy_library CLazyLibraries_microhttpd_library;

/// Loads the library on the first call; 1 when every symbol is resolved, else 0 (reported once on stderr).
int lazy_ready(struct lazy_library *library);

/// The library's error text (for failure values that are strings), "" when it loaded.
const char *lazy_error(struct lazy_library *library);

#define LAZY_POINTER(ret, name, params, args, fail) static ret (*lazy_##name) params;
#define LAZY_POINTER_VOID(name, params, args) static void (*lazy_##name) params;
#define LAZY_ENTRY(ret, name, params, args, fail) { #name, (void **)&lazy_##name },
#define LAZY_ENTRY_VOID(name, params, args) { #name, (void **)&lazy_##name },
#define LAZY_POINTER_FALLBACK(name, params, args, fallback) static void (*lazy_##name) params;
#define LAZY_ENTRY_FALLBACK(name, params, args, fallback) { #name, (void **)&lazy_##name },
// Each library's file lists its functions once, as X(ret, name, (params), (args), failure value) and
// V(name, (params), (args)) for functions returning void that act on the library's own objects (freeing,
// setting flags: with the library never loaded there is no such object, so V does not load it), and
// F(name, (params), (args), statement) for void functions that load it, with what to do when it is
// missing, in a macro taking X, V and F, and expands
// the list three times: the pointers, the symbol table, and the functions themselves, which call
// through the pointer once LAZY_LIBRARY (a macro naming the file's struct lazy_library) is ready.
#define LAZY_DEFINE(ret, name, params, args, fail) \
    ret name params { \
        if (!lazy_ready(&LAZY_LIBRARY)) return fail; \
        return lazy_##name args; \
    }
#define LAZY_DEFINE_VOID(name, params, args) \
    void name params { \
        if (__atomic_load_n(&LAZY_LIBRARY.loaded, __ATOMIC_ACQUIRE)) lazy_##name args; \
    }
#define LAZY_DEFINE_FALLBACK(name, params, args, fallback) \
    void name params { \
        if (lazy_ready(&LAZY_LIBRARY)) lazy_##name args; else { fallback; } \
    }
#define LAZY_TABLE(list) \
    list(LAZY_POINTER, LAZY_POINTER_VOID, LAZY_POINTER_FALLBACK) \
    static const struct lazy_symbol lazy_symbols[] = { list(LAZY_ENTRY, LAZY_ENTRY_VOID, LAZY_ENTRY_FALLBACK) }; \
    list(LAZY_DEFINE, LAZY_DEFINE_VOID, LAZY_DEFINE_FALLBACK)

/// The file's struct lazy_library (named by LAZY_LIBRARY), after LAZY_TABLE: its id, Debian package, the
/// symbols written out by hand (NULL, 0 for none) and its files, the main one first.
#define LAZY_LIBRARY_DEFINE(library_id, package_name, more, more_count, ...) \
    struct lazy_library LAZY_LIBRARY = { \
        .id = library_id, \
        .files = {__VA_ARGS__}, \
        .package = package_name, \
        .symbols = lazy_symbols, \
        .symbol_count = sizeof lazy_symbols / sizeof lazy_symbols[0], \
        .more_symbols = more, \
        .more_symbol_count = more_count, \
        .once = PTHREAD_ONCE_INIT, \
    };
#endif
