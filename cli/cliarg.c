/*
 * cliarg.c -- see cliarg.h.
 */
#include "cliarg.h"

#include <stdio.h>
#include <stdlib.h>

int cli_bad_usage(const char *msg, const char *arg, const char *usage)
{
    fprintf(stderr, "servesim: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

int cli_num_arg(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}
