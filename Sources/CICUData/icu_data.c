// ICU's data for the release executables (issue 36): the root and English locales and what is no
// locale's, instead of the Swift toolchain's 34 MB of every locale, converter and dictionary.
//
// The statically linked Foundation links ICU (lib_FoundationICU.a), whose data is one symbol,
// icudt76_dat, in an archive member of its own. Defined here, in an object the link always takes,
// that member is never taken. tools/icu/subset.py writes icudt76l-root-en.dat from the toolchain's
// data and says what it keeps. Release builds only: a debug build (the tests) loads Foundation as
// shared libraries, whose ICU keeps its own data. A toolchain with another ICU version names its data
// otherwise (icudt77_dat, ...): then this symbol is not used and ReleaseLinkTests fail on the size.
#ifdef LIVEPUSH_ICU_SUBSET
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc23-extensions"
__attribute__((aligned(16), used)) const unsigned char icudt76_dat[] = {
#embed "icudt76l-root-en.dat"
};
#pragma clang diagnostic pop
#else
// ISO C wants a declaration in every file.
typedef int CICUData_not_in_debug_builds;
#endif
