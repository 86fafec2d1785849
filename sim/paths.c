/*
 * paths.c -- where bundled data (models, hardware) lives.
 *
 * The data directory is, in order: $SERVESIM_DATA when set and non-empty;
 * the source tree compiled in as SERVESIM_DATA_DIR when its models/
 * directory exists (so that a binary moved away from its tree still falls
 * back to the working directory); else ".".  The answer is recomputed on
 * every call so that tests may point $SERVESIM_DATA elsewhere.
 */
/* realpath is XSI */
#define _XOPEN_SOURCE 700

#include "paths.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "common.h"

#define PATHS_MAX 4096

#ifdef SERVESIM_DATA_DIR
static int paths_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
#endif

const char *paths_models_dir(void)
{
    static char dir[PATHS_MAX];
    const char *env = getenv("SERVESIM_DATA");
    if (env && *env) {
        snprintf(dir, sizeof dir, "%s/models", env);
        return dir;
    }
#ifdef SERVESIM_DATA_DIR
    snprintf(dir, sizeof dir, "%s/models", SERVESIM_DATA_DIR);
    if (paths_is_dir(dir)) return dir;
#endif
    snprintf(dir, sizeof dir, "./models");
    return dir;
}

const char *paths_data_file(char *buf, size_t n, const char *sub, const char *name)
{
    if (n == 0) return buf;
    snprintf(buf, n, "%s/%s%s.json", paths_models_dir(), sub ? sub : "", name ? name : "");
    return buf;
}

static int paths_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

const char *paths_list_names(char *buf, size_t n, const char *sub)
{
    if (n == 0) return buf;
    char dirpath[PATHS_MAX];
    snprintf(dirpath, sizeof dirpath, "%s/%s", paths_models_dir(), sub ? sub : "");
    buf[0] = '\0';
    DIR *d = opendir(dirpath);
    if (!d) {
        snprintf(buf, n, "(none: cannot read %s)", dirpath);
        return buf;
    }
    /* Sorted, so that messages do not depend on directory order. */
    char **names = NULL;
    size_t count = 0, cap = 0;
    for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
        size_t len = strlen(ent->d_name);
        if (len <= 5 || ent->d_name[0] == '.' || strcmp(ent->d_name + len - 5, ".json") != 0)
            continue;
        if (count == cap) names = xrealloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
        names[count] = xstrdup(ent->d_name);
        names[count][len - 5] = '\0';
        count++;
    }
    closedir(d);
    if (count) qsort(names, count, sizeof *names, paths_cmp);
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
        if (used + 1 < n) {
            int w = snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
            if (w > 0) used += (size_t)w < n - used ? (size_t)w : n - used - 1;
        }
        free(names[i]);
    }
    free(names);
    if (count == 0) snprintf(buf, n, "(none in %s)", dirpath);
    return buf;
}

const char *paths_resolve(char *buf, size_t n, const char *kind, const char *sub, const char *name_or_path, Err *e)
{
    if (!name_or_path || !*name_or_path) {
        err_set(e, "%s: empty name", kind);
        return NULL;
    }
    size_t len = strlen(name_or_path);
    if (len >= 5 && strcmp(name_or_path + len - 5, ".json") == 0) {
        snprintf(buf, n, "%s", name_or_path);
        return buf;
    }
    if (strchr(name_or_path, '/')) {
        err_set(e, "%s \"%s\": a name may not contain '/'; give a path ending in .json instead", kind,
                name_or_path);
        return NULL;
    }
    paths_data_file(buf, n, sub, name_or_path);
    FILE *f = fopen(buf, "rb");
    if (!f) {
        char names[800];
        err_set(e, "unknown %s \"%s\" (no %s); available: %s", kind, name_or_path, buf,
                paths_list_names(names, sizeof names, sub));
        return NULL;
    }
    fclose(f);
    return buf;
}

const char *paths_data_root(char *buf, size_t n)
{
    const char *models = paths_models_dir();
    size_t len = strlen(models);
    if (len >= 7 && strcmp(models + len - 7, "/models") == 0) len -= 7;
    else len = 0;
    if (len == 0) snprintf(buf, n, ".");
    else snprintf(buf, n, "%.*s", (int)len, models);
    return buf;
}

const char *paths_resolve_in(char *buf, size_t n, const char *kind, const char *sub, const char *name_or_path,
                             const char *base_dir, Err *e)
{
    if (!name_or_path || !*name_or_path) {
        err_set(e, "%s: empty name", kind);
        return NULL;
    }
    size_t len = strlen(name_or_path);
    if (len < 5 || strcmp(name_or_path + len - 5, ".json") != 0 || name_or_path[0] == '/')
        return paths_resolve(buf, n, kind, sub, name_or_path, e);
    char beside[PATHS_MAX];
    const char *dir = base_dir && *base_dir ? base_dir : ".";
    int w = snprintf(beside, sizeof beside, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name_or_path);
    if (w > 0 && (size_t)w < sizeof beside && access(beside, R_OK) == 0) {
        snprintf(buf, n, "%s", beside);
        return buf;
    }
    char data[PATHS_MAX];
    w = snprintf(data, sizeof data, "%s/%s%s", paths_models_dir(), sub ? sub : "", name_or_path);
    if (w > 0 && (size_t)w < sizeof data && access(data, R_OK) == 0) {
        snprintf(buf, n, "%s", data);
        return buf;
    }
    err_set(e, "%s \"%s\": cannot read it (tried %s beside the file that names it, then %s in the data directory)",
            kind, name_or_path, beside, data);
    return NULL;
}

int paths_absolute(const char *path, char *out, size_t n, Err *e)
{
    char dir[PATHS_MAX], real[PATHS_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (strlen(path) >= sizeof dir) return err_set(e, "%.200s...: path too long", path);
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path) ? (int)(slash - path) : 1, path);
    else snprintf(dir, sizeof dir, ".");
    if (!realpath(dir, real)) return err_set(e, "%s: directory %s: %s", path, dir, strerror(errno));
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return err_set(e, "%s: expected a file name", path);
    if (snprintf(out, n, "%s/%s", strcmp(real, "/") ? real : "", base) >= (int)n)
        return err_set(e, "%s: path too long", path);
    return 0;
}
