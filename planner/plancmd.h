/*
 * plancmd.h -- the `servesim sweep` and `servesim plan` commands: options,
 * progress on stderr, the table, the JSON and CSV files (written
 * atomically, by rank 0 only under MPI).
 */
#ifndef SERVESIM_PLANCMD_H
#define SERVESIM_PLANCMD_H

extern const char plancmd_sweep_usage[];
extern const char plancmd_plan_usage[];

/* argv holds the options after the command name; the exit status. */
int plancmd_sweep(int argc, char **argv);
int plancmd_plan(int argc, char **argv);

#endif
