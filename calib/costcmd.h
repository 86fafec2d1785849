/*
 * costcmd.h -- `servesim cost`: query the calibrated cost model directly
 * (one GEMM's latency, or one iteration's time and breakdown).
 */
#ifndef SERVESIM_COSTCMD_H
#define SERVESIM_COSTCMD_H

/* argv[0] is the first argument after "cost".  Returns the exit status:
 * 0 done, 1 error (message on stderr), 2 bad usage. */
int costcmd_main(int argc, char **argv);

#endif
