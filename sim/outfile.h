/*
 * outfile.h -- writing a result file whole or not at all: the text goes to
 * a temporary file in the target's directory, which is flushed, fsynced and
 * then renamed over the target (rename is atomic within a file system), so
 * a reader never sees half a report and a failed or killed run leaves the
 * old file in place.  "-" writes to stdout, whose write errors (a full
 * disk, a closed pipe) are reported like any other.
 *
 * Every command checks its output paths with outfile_check before it does
 * its work, so a bad path fails at once and no output is written; an
 * output that is a file the command read (common_note_input: compared by
 * device and inode, so no spelling or symlink slips through) is refused,
 * by outfile_check for the inputs read so far and by outfile_open for all.
 */
#ifndef SERVESIM_OUTFILE_H
#define SERVESIM_OUTFILE_H

#include <stdio.h>

#include "common.h"

/* An output being written: f is the temporary file (or stdout). */
typedef struct OutFile {
    FILE *f;
    char *path;  /* the target */
    char *tmp;   /* the temporary file beside it; NULL for stdout or a device */
    int direct;  /* written in place: the target exists and is not a regular
                  * file (/dev/null, a FIFO, /dev/stdout): renaming a file
                  * over it would replace the device itself */
} OutFile;

/* Opens a temporary file beside path (stdout for "-"; the path itself
 * when it exists and is not a regular file); NULL + err. */
FILE *outfile_open(OutFile *o, const char *path, Err *e);
/* Flushes, fsyncs, closes and renames onto the target; on any write error
 * removes the temporary file and fails naming the target. */
int outfile_commit(OutFile *o, Err *e);
/* Drops the temporary file; the target is untouched. */
void outfile_abort(OutFile *o);
/* rename(2) of a finished temporary file onto path, then an fsync of the
 * directory (best effort) so a crash of the machine cannot bring the old
 * entry back: -1 + errno when the rename fails.  For outputs another
 * program writes (gnuplot's picture, a CSV writer's own file). */
int outfile_rename(const char *tmp, const char *path);

int outfile_write(const char *path, const char *text, Err *e);

/* Before any work: the directory of path exists and is writable, path is
 * not a directory.  what names the option ("--json"). */
int outfile_check(const char *path, const char *what, Err *e);
/* 1 when both name the same existing file (device and inode). */
int outfile_same(const char *a, const char *b);

#endif
