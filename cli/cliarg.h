/*
 * cliarg.h -- what the command-line front end's commands share when they
 * read their arguments: the usage error and number parsing.
 */
#ifndef SERVESIM_CLIARG_H
#define SERVESIM_CLIARG_H

/* Prints "servesim: MSG[: ARG]" and the usage to stderr; returns 2 (the
 * exit status of a usage error). */
int cli_bad_usage(const char *msg, const char *arg, const char *usage);
/* A number in [lo, hi] that is the whole of s: 0, or -1. */
int cli_num_arg(const char *s, double lo, double hi, double *out);

#endif
