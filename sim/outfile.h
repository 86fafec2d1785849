/*
 * outfile.h -- writing a result file whole or not at all: the text goes to
 * a temporary file in the target's directory, which is then renamed over
 * the target (rename is atomic within a file system), so a reader never
 * sees half a report and a failed run leaves the old file in place.
 * "-" writes to stdout.
 */
#ifndef SERVESIM_OUTFILE_H
#define SERVESIM_OUTFILE_H

#include <cjson/cJSON.h>

#include "common.h"

int outfile_write(const char *path, const char *text, Err *e);
/* Pretty-printed JSON and a final newline. */
int outfile_write_json(const char *path, const cJSON *root, Err *e);

#endif
