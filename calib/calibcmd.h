/*
 * calibcmd.h -- `servesim calib`: measure kernels, import published
 * tables, fit profiles, report their quality.
 */
#ifndef SERVESIM_CALIBCMD_H
#define SERVESIM_CALIBCMD_H

/* argv[0] is the subcommand (run, check, import, fit, report, quality).
 * Returns the exit status: 0 done, 1 error (message on stderr), 2 bad
 * usage. */
int calibcmd_main(int argc, char **argv);

#endif
