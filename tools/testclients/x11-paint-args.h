/* x11-paint: helpers and command-line parsing (messages, the clock, numbers, colours, geometry,
 * patterns). Included once by x11-paint.c after its structs, like x11-paint-scroll.h. */

/* ------------------------------------------------------------------ helpers and parsing */

static void fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("x11-paint: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(status);
}

/* One line to stdout, flushed at once: tests read it through a pipe. */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* A bad stdin command: reported on stderr, and on stdout so a waiting test is not stuck. */
static void complain(const char *what)
{
    fprintf(stderr, "x11-paint: %s\n", what);
    say("error %s", what);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A decimal integer in [min, max] that starts at s and ends at the character `stop`
 * ('\0': end of string); *end is then set to that character.  No spaces, no '+'. */
static bool parse_int_to(const char *s, char stop, long min, long max, int *out, const char **end)
{
    char *e;
    if (!isdigit((unsigned char)s[s[0] == '-']))
        return false;
    errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || v < min || v > max || *e != stop)
        return false;
    *out = (int)v;
    if (end)
        *end = e;
    return true;
}

static bool parse_int(const char *s, long min, long max, int *out)
{
    return parse_int_to(s, '\0', min, max, out, NULL);
}

static bool parse_colour(const char *s, uint32_t *out)
{
    if (strlen(s) != 6 || strspn(s, "0123456789abcdefABCDEF") != 6)
        return false;
    *out = (uint32_t)strtoul(s, NULL, 16);
    return true;
}

static bool parse_geometry(const char *s, int *w, int *h, int *x, int *y)
{
    return parse_int_to(s, 'x', 1, MAX_DIM, w, &s) && parse_int_to(s + 1, '+', 1, MAX_DIM, h, &s) &&
           parse_int_to(s + 1, '+', -MAX_DIM, MAX_DIM, x, &s) && parse_int(s + 1, -MAX_DIM, MAX_DIM, y);
}

/* PATTERN from the words a[0..n-1]; on failure, a message naming the bad word in err. */
static bool parse_pattern(int n, char **a, struct pattern *p, char *err, size_t errlen)
{
    static const char *names[] = { "solid", "checker", "square", "bars", "timecode", "scroll" };
    static const char *forms[] = { "solid RRGGBB", "checker N RRGGBB RRGGBB",
                                   "square RRGGBB RRGGBB SIZE SPEED", "bars", "timecode RRGGBB RRGGBB SIZE SPEED",
                                   "scroll" };
    static const int words[] = { 2, 4, 5, 1, 5, 1 };
    struct pattern q = { 0 };
    int k = 0, j = 0;   /* k: which pattern; j: the argument being parsed */

    while (n > 0 && k < 6 && strcmp(a[0], names[k]) != 0)
        k++;
    if (n < 1 || k == 6) {
        snprintf(err, errlen, "%s%s%s (want solid, checker, square, bars, timecode or scroll)", n ? "unknown pattern '" : "missing PATTERN",
                 n ? a[0] : "", n ? "'" : "");
        return false;
    }
    if (n != words[k]) {
        snprintf(err, errlen, "pattern '%s' takes %d argument(s), got %d (want %s)", a[0], words[k] - 1,
                 n - 1, forms[k]);
        return false;
    }
    q.kind = (enum kind)k;
    bool ok = k == SOLID   ? parse_colour(a[j = 1], &q.c1)
            : k == CHECKER ? parse_int(a[j = 1], 1, MAX_DIM, &q.cell) && parse_colour(a[j = 2], &q.c1) &&
                             parse_colour(a[j = 3], &q.c2)
            : k == SQUARE || k == TIMECODE
                           ? parse_colour(a[j = 1], &q.c1) && parse_colour(a[j = 2], &q.c2) &&
                             parse_int(a[j = 3], 1, MAX_DIM, &q.size) && parse_int(a[j = 4], 0, MAX_DIM, &q.speed)
            : true;
    if (!ok) {
        snprintf(err, errlen, "pattern '%s': bad argument '%s' (want %s; colours hex, N and SIZE 1..32767, "
                 "SPEED 0..32767)", a[0], a[j], forms[k]);
        return false;
    }
    *p = q;
    return true;
}

