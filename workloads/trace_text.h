/*
 * trace_text.h -- the text helpers the trace reader and the format parsers
 * share: line trimming and peeking, excerpts for messages, strict number
 * parsing, and the CSV field splitter.  Knows neither the reader nor any
 * format.
 */
#ifndef SERVESIM_TRACE_TEXT_H
#define SERVESIM_TRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Drops a line's newline, a '\r' and trailing blanks in place (len is the
 * length before); 1 if anything but blanks is left. */
int trace_text_trim(char *s, size_t len);
/* The first non-blank character of s. */
const char *trace_text_skip_blanks(const char *s);
/* The (skip + 1)-th non-blank line of an open file, trimmed, into *line
 * (getline's buffer); 1 if found.  The file is rewound after. */
int trace_text_peek_line(FILE *f, char **line, size_t *cap, int skip);

/* A line cut to a readable length for messages (n bytes with the NUL),
 * control and non-UTF-8 bytes escaped as \\xNN (text_excerpt); returns buf. */
const char *trace_text_excerpt(const char *line, char *buf, size_t n);

/* Strict number parsing of a whole field: 0 ok, -1 not a number (empty,
 * trailing text, out of range, NaN). */
int trace_text_parse_i64(const char *s, int64_t *out);
int trace_text_parse_f64(const char *s, double *out);

/* Splits a CSV line in place at commas (no quoted commas), trimming blanks
 * and surrounding double quotes; returns the field count (at most max; one
 * more than max means "too many"). */
int trace_text_csv_split(char *line, char **fields, int max);

#endif
