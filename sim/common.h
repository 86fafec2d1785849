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
#include <stdio.h>

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

/* Allocation that exits 1 with a message on out-of-memory (removing the
 * temporary outputs registered with common_temp_add): the only failure we
 * do not try to survive. */
void *xmalloc(size_t n);
/* What xmalloc does when malloc fails (for a library that allocated itself). */
void common_oom(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* A temporary output file (the pointer is kept, not copied) to remove if
 * the process runs out of memory; dropped once renamed or removed. */
void common_temp_add(const char *path);
void common_temp_drop(const char *path);

/* A finite decimal number, the whole of s: [+-] digits [. digits]
 * [e [+-] digits] (issue 35: "inf", "nan", "0x10", "" and blanks are not
 * measurements).  0, or -1 with *out untouched. */
int common_parse_decimal(const char *s, double *out);

/* Reads a whole file into a NUL-terminated buffer; NULL + err on failure
 * and past the file-size cap.  read_text_file also refuses a NUL byte
 * (every parser would stop there, silently reading half the file). */
char *read_file(const char *path, size_t *len_out, Err *e);
char *read_text_file(const char *path, size_t *len_out, Err *e);

/* The files this process has read (issue 35: an output must never replace
 * an input, however it is spelled).  Every reader notes the file it opened
 * (read_file does; the trace, CSV and script readers call it themselves);
 * outfile_open refuses to write over a noted file, compared by device and
 * inode, so a symlink or another spelling cannot slip through.  f is the
 * open stream (fstat), path the name for messages.  forget: a command that
 * reads the very file it is about to replace (validate --bands merging an
 * existing band file) says so. */
/* Where a command may read (issue 35: a shared Lua script reads only
 * under its directory, the working directory, the bundled data and what
 * `servesim lua --allow-read PATH` names): n roots, resolved paths; 0
 * turns the check off (every other command).  common_read_check fails
 * naming the file and the rule for a file that exists and lies outside. */
void common_read_roots(const char *const *roots, int n);
/* Whether the resolved path lies at or under the resolved directory root
 * ("/" holds everything); both absolute, without "..". */
int paths_under(const char *path, const char *root);
int common_read_check(const char *path, Err *e);

void common_guard_inputs(int on); /* the servesim command turns it on (main); off, nothing is noted */
void common_note_input(FILE *f, const char *path);
void common_forget_input(const char *path);
/* An input file opened for reading (mode "r" or "rb"): common_read_check,
 * fopen and common_note_input; NULL + e ("PATH: cannot open: why"). */
FILE *common_open_input(const char *path, const char *mode, Err *e);
/* The noted input that is the same file as path (an existing file), or
 * NULL. */
const char *common_input_same(const char *path);

/* Caps on what one input may make servesim hold (issue 15): a file read
 * whole and one line of a line reader.  Defaults 1 GiB and 16 MiB; the
 * environment variables SERVESIM_MAX_FILE_BYTES and SERVESIM_MAX_LINE_BYTES
 * lift (or lower) them.  COMMON_*_HINT words the way out in messages. */
size_t common_max_file_bytes(void);
size_t common_max_line_bytes(void);
#define COMMON_FILE_CAP_HINT "set SERVESIM_MAX_FILE_BYTES to lift the cap"
#define COMMON_LINE_CAP_HINT "set SERVESIM_MAX_LINE_BYTES to lift the cap"

/* One line of f (without its newline) into *line (grown as needed, like
 * getline): its length, -1 at end of file, -2 with e filled when the line
 * passes the line cap or holds a NUL byte.  what names the file. */
long common_read_line(FILE *f, char **line, size_t *cap, const char *what, Err *e);
/* The same for a reader that reads many lines: the cap given (from
 * common_max_line_bytes, once), the file named "path:lineno" in a message,
 * formatted only when there is one. */
long common_read_line_at(FILE *f, char **line, size_t *cap, size_t max, const char *path, unsigned long long lineno,
                         Err *e);

/* An excerpt of input text for a message, always valid UTF-8: at most
 * n - 1 bytes into buf, control bytes and bytes that are not UTF-8 written
 * as \xNN, a multi-byte character never cut, "..." when shortened.  Every
 * message that quotes input goes through this. */
const char *text_excerpt(const char *s, size_t len, char *buf, size_t n);

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
