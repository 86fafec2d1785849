/*
 * common.h -- error reporting and small helpers shared by every module.
 *
 * Library code never exits: it fills an Err with a message that names the
 * file, the key path or line, the bad value and what was expected, and
 * returns -1 (or NULL).  Only main() turns an error into an exit status.
 */
#ifndef SERVESIM_COMMON_H
#define SERVESIM_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define ERR_MSG_MAX 1024

typedef struct Err {
    char msg[ERR_MSG_MAX];
} Err;

/* Formats the message into e (if e is not NULL) and returns -1, so that
 * callers can write `return err_set(e, "...")`. */
int err_set(Err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prepends "prefix: " to an existing message (used when an error climbs
 * out of a nested reader and the caller knows the file name). */
int err_prefix(Err *e, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Allocation that aborts with a message on out-of-memory: the only failure
 * we do not try to survive. */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* Reads a whole file into a NUL-terminated buffer; NULL + err on failure. */
char *read_file(const char *path, size_t *len_out, Err *e);

#define NS_PER_S 1000000000LL
#define NS_PER_MS 1000000LL
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Impossible-but-survivable conditions (SQLite's ALWAYS/NEVER). */
#define ALWAYS(x) (x)
#define NEVER(x) (x)

#endif
