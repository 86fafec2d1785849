/*
 * jsonio.h -- cJSON reading with key paths.
 *
 * Every getter takes the object, the key, and `where`: a prefix naming the
 * file and the key path of the object ("s.json: workload.requests[3]").
 * Errors read "s.json: workload.requests[3].prompt_tokens: got -5, expected
 * an integer >= 1".  Lookups are case-sensitive.  Unknown keys are rejected
 * with jsonio_check_keys.
 */
#ifndef SERVESIM_JSONIO_H
#define SERVESIM_JSONIO_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common.h"

/* Parses text; on a syntax error names `name`, the line and column. */
cJSON *jsonio_parse(const char *text, const char *name, Err *e);
/* Reads and parses a file. */
cJSON *jsonio_parse_file(const char *path, Err *e);
/* Reads a file's JSON object a piece at a time (issue 36: a run's report
 * lists every request): each element of its top-level array member `key`
 * is parsed alone and handed to each, in order (i from 0; each returns -1
 * with e set to stop); the rest comes back as a tree, `key` an empty
 * array in its place.  Memory is the largest element and the rest, not
 * the file.  A `key` that is not an array is left whole in the tree.  The
 * checks of jsonio_parse_file (the file-size cap, a NUL byte); NULL + e
 * when the file cannot be read or is not JSON (naming it). */
typedef int (*JsonioEach)(void *ctx, const cJSON *elem, uint64_t i, Err *e);
cJSON *jsonio_stream_array(const char *path, const char *key, JsonioEach each, void *ctx, Err *e);

/* Fails naming the first key of obj not in the NULL-terminated list
 * `allowed`, and the keys that are allowed.  obj must be an object. */
int jsonio_check_keys(const cJSON *obj, const char *where, const char *const *allowed, Err *e);
/* Refuses a key that appears twice in obj (cJSON keeps both and lookups
 * see the first), for readers that allow unknown keys: 0, or -1 + err
 * ("WHERE: duplicate key "K"", or without WHERE when it is ""). */
int jsonio_check_duplicates(const cJSON *obj, const char *where, Err *e);

/* Fails unless v is an object (or array). */
int jsonio_expect_object(const cJSON *v, const char *where, Err *e);
int jsonio_expect_array(const cJSON *v, const char *where, Err *e);

/* Getters.  `required` = 1: a missing key is an error; 0: *out is left
 * unchanged (the caller sets the default first) and 0 is returned.
 * Return 1 if present and valid, 0 if absent and optional, -1 on error.
 * Integers must be whole numbers within [min, max]. */
int jsonio_int(const cJSON *obj, const char *key, const char *where, int required,
               int64_t min, int64_t max, int64_t *out, Err *e);
int jsonio_num(const cJSON *obj, const char *key, const char *where, int required,
               double min, double max, double *out, Err *e);
int jsonio_bool(const cJSON *obj, const char *key, const char *where, int required,
                int *out, Err *e);
/* *out points into the cJSON tree (valid while the tree lives). */
int jsonio_str(const cJSON *obj, const char *key, const char *where, int required,
               const char **out, Err *e);
/* Like jsonio_str, but the value must be one of the NULL-terminated
 * `choices`; *out is its index. */
int jsonio_enum(const cJSON *obj, const char *key, const char *where, int required,
                const char *const *choices, int *out, Err *e);

/* Builds "where.key" or "where[i]" into buf (truncating safely). */
const char *jsonio_path(char *buf, size_t n, const char *where, const char *key);
const char *jsonio_index(char *buf, size_t n, const char *where, int i);

/* Writes a cJSON tree to a file (pretty when pretty != 0). */
int jsonio_write_file(const cJSON *root, const char *path, int pretty, Err *e);

/* Adds a number rounded to `sig` significant digits, so that reports do not
 * print 17-digit noise and stay byte-identical across runs. */
cJSON *jsonio_add_num(cJSON *obj, const char *key, double v);

#endif
