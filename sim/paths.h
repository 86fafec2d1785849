/*
 * paths.h -- where bundled data lives.
 *
 * Models are looked up in $SERVESIM_DATA/models (if set), else in the
 * directory compiled in as SERVESIM_DATA_DIR (the source tree), else in
 * ./models.  Hardware lives in <models>/hardware.
 */
#ifndef SERVESIM_PATHS_H
#define SERVESIM_PATHS_H

#include <stddef.h>

/* Writes "<data>/models/<sub><name>.json" into buf. */
const char *paths_data_file(char *buf, size_t n, const char *sub, const char *name);
/* The models directory actually used (for messages and listings). */
const char *paths_models_dir(void);
/* Writes the sorted names (file stems) of the *.json files in
 * "<models>/<sub>" into buf as "a, b, c" (a "(none ...)" note when there are
 * none), for messages that list what is available. */
const char *paths_list_names(char *buf, size_t n, const char *sub);

/* Resolves a bundled description's name ("h100-sxm" in <models>/<sub>) or a
 * path ending in .json into buf.  `kind` ("model", "hardware") words the
 * error, which lists the available names.  NULL + err when not found. */
struct Err;
const char *paths_resolve(char *buf, size_t n, const char *kind, const char *sub, const char *name_or_path,
                          struct Err *e);

/* The data directory: the models directory's parent (the source tree,
 * or $SERVESIM_DATA), "." when the models directory is ./models. */
const char *paths_data_root(char *buf, size_t n);

/* The one rule for a file a scenario names (issue 35): a name is the
 * bundled <models>/<sub><name>.json, an absolute path itself, and a
 * relative path ending in .json is looked up beside the file that names it
 * (base_dir, its directory; NULL or "" for the current directory, where a
 * scenario given as text is), then as <models>/<sub><path> -- never in the
 * working directory first.  NULL + err naming both places tried. */
const char *paths_resolve_in(char *buf, size_t n, const char *kind, const char *sub, const char *name_or_path,
                             const char *base_dir, struct Err *e);

/* The absolute path of a file that may not exist yet: its directory's
 * realpath (so no ".." or symlinked directory is left) plus its base name.
 * 0, or -1 + err naming the path (the directory missing, no base name, too
 * long).  Lua scripts' outputs are checked against their allowed roots
 * with it, plots' against their inputs. */
int paths_absolute(const char *path, char *out, size_t n, struct Err *e);

#endif
