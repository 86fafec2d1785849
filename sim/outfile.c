/*
 * outfile.c -- atomic result files (see outfile.h).
 *
 * Invariant: the target is replaced only by rename(2) of a complete,
 * fsynced temporary file in the same directory; every error path unlinks
 * the temporary file.
 */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

FILE *outfile_open(OutFile *o, const char *path, Err *e)
{
    memset(o, 0, sizeof *o);
    o->path = xstrdup(path);
    if (!strcmp(path, "-")) {
        o->f = stdout;
        return o->f;
    }
    /* never over a file this command read, whatever its spelling */
    const char *in = common_input_same(path);
    if (in) {
        err_set(e, "%s: is %s, which this command read as an input; choose another output name", path, in);
        free(o->path);
        memset(o, 0, sizeof *o);
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        o->direct = 1;
        o->f = fopen(path, "w");
        if (!o->f) {
            err_set(e, "%s: cannot write: %s", path, strerror(errno));
            free(o->path);
            memset(o, 0, sizeof *o);
        }
        return o->f;
    }
    size_t plen = strlen(path);
    o->tmp = xmalloc(plen + 16);
    snprintf(o->tmp, plen + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        err_set(e, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
        return NULL;
    }
    common_temp_add(o->tmp);
    /* mkstemp makes the file 0600; a report is as readable as any other */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0) { /* not fatal: the file stays private */ }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        err_set(e, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        common_temp_drop(o->tmp);
        free(o->tmp);
        free(o->path);
        memset(o, 0, sizeof *o);
    }
    return o->f;
}

/* After the rename, the directory entry itself: fsync the directory so
 * that a crash of the machine (not only of the process) cannot bring the
 * old file back.  Best effort: some file systems refuse fsync on a
 * directory, and the file's data is already synced. */
static char *outfile_dirname(const char *path)
{
    size_t len = strlen(path);
    char *dir = xmalloc(len + 2);
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    return dir;
}

static void outfile_sync_dir(const char *path)
{
    char *dir = outfile_dirname(path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        if (fsync(fd) != 0) { /* best effort */ }
        close(fd);
    }
    free(dir);
}

int outfile_rename(const char *tmp, const char *path)
{
    if (rename(tmp, path) != 0) return -1;
    outfile_sync_dir(path);
    return 0;
}

static void outfile_release(OutFile *o)
{
    if (o->tmp) common_temp_drop(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int outfile_commit(OutFile *o, Err *e)
{
    if (!o->f) return err_set(e, "%s: not open", o->path ? o->path : "(output)");
    if (o->direct) {
        errno = 0;
        int bad = fflush(o->f) != 0 || ferror(o->f);
        int saved = errno;
        if (fclose(o->f) != 0 && !bad) {
            bad = 1;
            saved = errno;
        }
        o->f = NULL;
        if (bad) err_set(e, "%s: write error: %s", o->path, saved ? strerror(saved) : "unknown");
        outfile_release(o);
        return bad ? -1 : 0;
    }
    if (!o->tmp) {
        errno = 0;
        int bad = fflush(stdout) != 0 || ferror(stdout);
        int saved = errno;
        clearerr(stdout);
        outfile_release(o);
        if (bad) return err_set(e, "stdout: write error: %s", saved ? strerror(saved) : "unknown");
        return 0;
    }
    errno = 0;
    int bad = fflush(o->f) != 0 || ferror(o->f);
    if (!bad && fsync(fileno(o->f)) != 0 && errno != EINVAL && errno != EROFS) bad = 1;
    int saved = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    o->f = NULL;
    if (!bad && outfile_rename(o->tmp, o->path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        unlink(o->tmp);
        err_set(e, "%s: write error: %s", o->path, saved ? strerror(saved) : "unknown");
        outfile_release(o);
        return -1;
    }
    outfile_release(o);
    return 0;
}

void outfile_abort(OutFile *o)
{
    if (o->direct && o->f) fclose(o->f);
    if (o->tmp) {
        if (o->f) fclose(o->f);
        unlink(o->tmp);
    }
    outfile_release(o);
}

int outfile_write(const char *path, const char *text, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    size_t n = strlen(text);
    errno = 0;
    if (fwrite(text, 1, n, f) != n) {
        int err = errno; /* ENOSPC, EFBIG: ferror alone would lose it */
        outfile_abort(&o);
        return err_set(e, "%s: cannot write: %s", path, err ? strerror(err) : "short write");
    }
    return outfile_commit(&o, e);
}

int outfile_check(const char *path, const char *what, Err *e)
{
    if (!*path) return err_set(e, "%s: expected a file name, got \"\"", what);
    if (!strcmp(path, "-")) return 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return err_set(e, "%s %s: is a directory; expected a file name", what, path);
    const char *in = common_input_same(path); /* the inputs read so far */
    if (in) return err_set(e, "%s %s: is %s, which this command reads as an input; choose another output name", what,
                           path, in);
    char *dir = outfile_dirname(path);
    int rc = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = err_set(e, "%s %s: the directory %s does not exist", what, path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = err_set(e, "%s %s: cannot write in %s: %s", what, path, dir, strerror(errno));
    free(dir);
    return rc;
}

int outfile_same(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return 0;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0) return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
