/*
 * outfile.c -- atomic result files (see outfile.h).
 */
#include "outfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outfile_write(const char *path, const char *text, Err *e)
{
    size_t n = strlen(text);
    if (!strcmp(path, "-")) {
        if (fwrite(text, 1, n, stdout) != n || fflush(stdout) != 0) return err_set(e, "stdout: write error");
        return 0;
    }
    size_t plen = strlen(path);
    char *tmp = xmalloc(plen + 16);
    snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int saved = errno;
        free(tmp);
        return err_set(e, "%s: cannot create a temporary file beside it: %s", path, strerror(saved));
    }
    /* mkstemp makes the file 0600; a report is as readable as any other */
    mode_t um = umask(0);
    umask(um);
    fchmod(fd, 0666 & ~um);
    FILE *f = fdopen(fd, "w");
    int bad = !f;
    if (f) {
        bad |= fwrite(text, 1, n, f) != n;
        bad |= fflush(f) != 0 || ferror(f) != 0;
        bad |= fclose(f) != 0;
    } else {
        close(fd);
    }
    if (bad || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        free(tmp);
        return err_set(e, "%s: write error: %s", path, strerror(saved));
    }
    free(tmp);
    return 0;
}

int outfile_write_json(const char *path, const cJSON *root, Err *e)
{
    char *s = cJSON_Print(root);
    if (!s) return err_set(e, "%s: cannot render JSON", path);
    size_t n = strlen(s);
    char *t = xmalloc(n + 2);
    memcpy(t, s, n);
    t[n] = '\n';
    t[n + 1] = '\0';
    cJSON_free(s);
    int rc = outfile_write(path, t, e);
    free(t);
    return rc;
}
