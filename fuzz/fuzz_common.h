/*
 * fuzz_common.h -- shared helpers of the libFuzzer harnesses (fuzz/README.md):
 * input size cap, NUL-terminated copies, a per-process temporary directory.
 */
#ifndef SERVESIM_FUZZ_COMMON_H
#define SERVESIM_FUZZ_COMMON_H

#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#define FUZZ_MAX_INPUT (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Bounded work per input: small caps on requests, files and lines. */
static inline void fuzz_limits(void)
{
    setenv("SERVESIM_MAX_REQUESTS", "10000", 1);
    setenv("SERVESIM_MAX_FILE_BYTES", "1048576", 1);
    setenv("SERVESIM_MAX_LINE_BYTES", "65536", 1);
}

static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A directory of this process's own for the files of one input; the
 * harness calls fuzz_tmpdir_remove() when the input is done (libFuzzer
 * leaves with _Exit, so atexit would not do). */
static char fuzz_dir[64];
/* Removes dir and everything under it (symlinks themselves, not what they
 * point at). */
static inline void fuzz_rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        unlink(dir);
        return;
    }
    struct dirent *de;
    char path[600];
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            struct stat st;
            if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) fuzz_rm_tree(path);
            else unlink(path);
        }
    closedir(d);
    rmdir(dir);
}
static inline void fuzz_tmpdir_remove(void)
{
    if (!fuzz_dir[0]) return;
    fuzz_rm_tree(fuzz_dir);
    fuzz_dir[0] = '\0';
}
static inline const char *fuzz_tmpdir(void)
{
    if (!fuzz_dir[0]) {
        snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/servesim-fuzz-XXXXXX");
        if (!mkdtemp(fuzz_dir)) abort();
    }
    return fuzz_dir;
}

/* Writes data to DIR/name; returns the path (static buffer) or NULL. */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", fuzz_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) return NULL;
    if (size && fwrite(data, 1, size, f) != size) { fclose(f); return NULL; }
    if (fclose(f) != 0) return NULL;
    return path;
}

#endif
