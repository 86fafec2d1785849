/*
 * par.h -- independent jobs spread over the local cores or over the ranks
 * of an MPI job, their results gathered in job order.
 *
 * A job is a function of its index that returns text (the planner's jobs
 * return a JSON object); the caller gets results[j] for every job j, the
 * same bytes whichever process computed it, so a sweep or a plan is
 * byte-identical run by one process, by N local workers or by
 * `mpirun -np N`.  Every path -- in-process, forked workers, MPI ranks --
 * hands results back as text, so none of them can differ by a rounding.
 *
 * Local workers are forked processes, one per job at a time (a job runs
 * seconds; a fork costs about a millisecond), at most `workers` at once
 * (0: every online core).  A process shares nothing with the others, so
 * the simulator needs no locks.
 *
 * MPI (built with `make MPI=1`, launched by mpirun): job j runs on rank
 * j mod size, sequentially; every rank receives every result
 * (MPI_Allgatherv), so all ranks take the same next step of a search and
 * call par_map the same number of times in the same order.  Only rank 0
 * prints and writes files.  A process not started by mpirun does not
 * initialise MPI and uses its local cores.
 */
#ifndef SERVESIM_PAR_H
#define SERVESIM_PAR_H

#include <stdint.h>

#include "common.h"

/* Starts MPI when built with it and launched by mpirun; harmless
 * otherwise.  par_finalize ends it. */
void par_init(void);
void par_finalize(void);
int par_rank(void);            /* 0 outside MPI */
int par_size(void);            /* 1 outside MPI */
int par_has_mpi(void);         /* 1 when built with MPI support */

/* A job: result text (malloc'd; par_map frees or hands it over), or NULL
 * with e set. */
typedef char *(*ParJob)(void *ctx, uint32_t job, Err *e);
/* Called in the parent (rank 0 under MPI) as jobs finish. */
typedef void (*ParProgress)(void *ctx, uint32_t done, uint32_t total);

typedef struct ParOpts {
    int workers;               /* local processes at once; 0 = every online core; 1 = in this process */
    ParProgress progress;      /* optional */
    void *progress_ctx;
} ParOpts;

/* Runs jobs 0..n-1 and fills results[j] (the caller frees each).  On
 * failure returns -1 with the message of the lowest-numbered failed job
 * (so the error does not depend on which worker finished first) and no
 * results.  workers = 1 always runs in this process, also under MPI (a
 * job that itself calls par_map does so with workers = 1). */
int par_map(const ParOpts *o, uint32_t n, ParJob fn, void *ctx, char **results, Err *e);

#endif
