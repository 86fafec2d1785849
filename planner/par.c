/*
 * par.c -- local workers (fork) and MPI ranks for independent jobs (see
 * par.h).
 *
 * Invariants: results come back as text tagged 'O' (the job's result) or
 * 'E' (its error message); par_map fills results[] only when every job
 * succeeded; the first error reported is the lowest-numbered job's.  A
 * forked child never returns: it writes its tagged text and _exits, so
 * no atexit handler or stdio buffer of the parent runs twice.
 */
#include "par.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef SERVESIM_MPI
#include <mpi.h>
#endif

#ifdef SERVESIM_MPI
static int par_mpi_on; /* MPI_Init ran */
#endif
static int par_rank_v, par_size_v = 1;

int par_has_mpi(void)
{
#ifdef SERVESIM_MPI
    return 1;
#else
    return 0;
#endif
}

void par_init(void)
{
#ifdef SERVESIM_MPI
    /* Only under a launcher: a plain `servesim sweep` must not start an
     * MPI singleton (slow, and noisy in containers). */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMI_SIZE") && !getenv("PMIX_RANK")) return;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS) return;
    MPI_Comm_rank(MPI_COMM_WORLD, &par_rank_v);
    MPI_Comm_size(MPI_COMM_WORLD, &par_size_v);
    par_mpi_on = 1;
#endif
}

void par_finalize(void)
{
#ifdef SERVESIM_MPI
    if (par_mpi_on) MPI_Finalize();
    par_mpi_on = 0;
#endif
}

int par_rank(void) { return par_rank_v; }
int par_size(void) { return par_size_v; }

/* Tagged text: 'O' + result or 'E' + message. */
static char *tagged(char tag, const char *text)
{
    size_t n = strlen(text);
    char *t = xmalloc(n + 2);
    t[0] = tag;
    memcpy(t + 1, text, n + 1);
    return t;
}

static char *run_one(ParJob fn, void *ctx, uint32_t j)
{
    Err e = {0};
    char *r = fn(ctx, j, &e);
    if (!r) return tagged('E', e.msg[0] ? e.msg : "job failed without a message");
    char *t = tagged('O', r);
    free(r);
    return t;
}

/* Turns tagged texts into results, or the first error.  Frees the tags. */
static int untag(uint32_t n, char **tag, char **results, Err *e)
{
    int bad = -1;
    for (uint32_t j = 0; j < n && bad < 0; j++)
        if (!tag[j] || tag[j][0] != 'O') bad = (int)j;
    if (bad >= 0) {
        err_set(e, "%s", tag[bad] ? tag[bad] + 1 : "a worker returned nothing");
        for (uint32_t j = 0; j < n; j++) free(tag[j]);
        return -1;
    }
    for (uint32_t j = 0; j < n; j++) {
        size_t len = strlen(tag[j] + 1);
        memmove(tag[j], tag[j] + 1, len + 1);
        results[j] = tag[j];
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ------------------------------------------------------ local workers */

typedef struct Slot {
    pid_t pid;
    int fd;
    uint32_t job;
    char *buf;
    size_t len, cap;
} Slot;

static int local_workers(const ParOpts *o, uint32_t n)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int w = o && o->workers > 0 ? o->workers : (cores > 0 ? (int)cores : 1);
    if ((uint32_t)w > n) w = (int)n;
    return w < 1 ? 1 : w;
}

static int spawn(Slot *s, uint32_t j, ParJob fn, void *ctx, Err *e)
{
    int p[2];
    if (pipe(p) < 0) return err_set(e, "cannot create a pipe for a worker: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return err_set(e, "cannot start a worker process: %s", strerror(errno));
    }
    if (pid == 0) {
        close(p[0]);
        char *t = run_one(fn, ctx, j);
        int rc = write_all(p[1], t, strlen(t));
        _exit(rc == 0 ? 0 : 3);
    }
    close(p[1]);
    *s = (Slot){.pid = pid, .fd = p[0], .job = j};
    return 0;
}

/* Reads what is there; 1 at end of file. */
static int drain(Slot *s)
{
    for (;;) {
        if (s->cap - s->len < 4096) {
            s->cap = s->cap ? s->cap * 2 : 8192;
            s->buf = xrealloc(s->buf, s->cap);
        }
        ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            s->buf[s->len] = '\0';
            return 1;
        }
        s->len += (size_t)r;
        return 0;
    }
}

static int par_local(const ParOpts *o, uint32_t n, ParJob fn, void *ctx, char **tag, Err *e)
{
    int w = local_workers(o, n);
    Slot *slot = xcalloc((size_t)w, sizeof *slot);
    struct pollfd *pfd = xcalloc((size_t)w, sizeof *pfd);
    uint32_t next = 0, done = 0;
    int running = 0, rc = 0;
    while (done < n) {
        while (rc == 0 && running < w && next < n) {
            if (spawn(&slot[running], next, fn, ctx, e) < 0) {
                rc = -1;
                break;
            }
            next++;
            running++;
        }
        if (running == 0) break;
        for (int i = 0; i < running; i++) pfd[i] = (struct pollfd){.fd = slot[i].fd, .events = POLLIN};
        if (poll(pfd, (nfds_t)running, -1) < 0) {
            if (errno == EINTR) continue;
            rc = err_set(e, "waiting for workers: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < running; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (!drain(&slot[i])) continue;
            Slot *s = &slot[i];
            close(s->fd);
            int st = 0;
            while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR) {}
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && s->len > 0) {
                tag[s->job] = s->buf;
            } else {
                char msg[160];
                if (WIFSIGNALED(st))
                    snprintf(msg, sizeof msg, "job %u: its worker process died (signal %d)", s->job, WTERMSIG(st));
                else
                    snprintf(msg, sizeof msg, "job %u: its worker process failed (exit %d)", s->job,
                             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
                tag[s->job] = tagged('E', msg);
                free(s->buf);
            }
            done++;
            if (o && o->progress) o->progress(o->progress_ctx, done, n);
            /* the last slot (and its poll entry) takes this one's place
             * and is looked at next */
            slot[i] = slot[--running];
            pfd[i] = pfd[running];
            i--;
        }
    }
    for (int i = 0; i < running; i++) { /* only after a failed spawn */
        close(slot[i].fd);
        kill(slot[i].pid, SIGTERM);
        while (waitpid(slot[i].pid, NULL, 0) < 0 && errno == EINTR) {}
        free(slot[i].buf);
    }
    free(slot);
    free(pfd);
    return rc;
}

/* ------------------------------------------------------------- MPI */

#ifdef SERVESIM_MPI
/* Each rank's tagged results, concatenated as [u32 job][u32 len][bytes]. */
static int par_mpi(const ParOpts *o, uint32_t n, ParJob fn, void *ctx, char **tag, Err *e)
{
    size_t cap = 1024, len = 0;
    char *mine = xmalloc(cap);
    uint32_t own_done = 0;
    for (uint32_t j = (uint32_t)par_rank_v; j < n; j += (uint32_t)par_size_v) {
        char *t = run_one(fn, ctx, j);
        uint32_t tl = (uint32_t)strlen(t);
        while (len + 8 + tl > cap) cap *= 2;
        mine = xrealloc(mine, cap);
        memcpy(mine + len, &j, 4);
        memcpy(mine + len + 4, &tl, 4);
        memcpy(mine + len + 8, t, tl);
        len += 8 + tl;
        free(t);
        own_done++;
        if (par_rank_v == 0 && o && o->progress) {
            uint32_t est = own_done * (uint32_t)par_size_v;
            o->progress(o->progress_ctx, est < n ? est : n, n);
        }
    }
    if (len > (size_t)0x7fffffff) {
        free(mine);
        return err_set(e, "MPI: %zu bytes of results on rank %d, more than one message holds", len, par_rank_v);
    }
    int my_len = (int)len;
    int *lens = xcalloc((size_t)par_size_v, sizeof *lens), *offs = xcalloc((size_t)par_size_v, sizeof *offs);
    MPI_Allgather(&my_len, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD);
    long long total = 0;
    for (int r = 0; r < par_size_v; r++) {
        offs[r] = (int)total;
        total += lens[r];
    }
    if (total > 0x7fffffff) {
        free(mine);
        free(lens);
        free(offs);
        return err_set(e, "MPI: %lld bytes of results in all, more than one message holds", total);
    }
    char *all = xmalloc((size_t)total + 1);
    MPI_Allgatherv(mine, my_len, MPI_CHAR, all, lens, offs, MPI_CHAR, MPI_COMM_WORLD);
    for (long long p = 0; p + 8 <= total;) {
        uint32_t j, tl;
        memcpy(&j, all + p, 4);
        memcpy(&tl, all + p + 4, 4);
        if (j < n && !tag[j]) {
            tag[j] = xmalloc(tl + 1);
            memcpy(tag[j], all + p + 8, tl);
            tag[j][tl] = '\0';
        }
        p += 8 + tl;
    }
    free(all);
    free(mine);
    free(lens);
    free(offs);
    return 0;
}
#endif

int par_map(const ParOpts *o, uint32_t n, ParJob fn, void *ctx, char **results, Err *e)
{
    if (n == 0) return 0;
    char **tag = xcalloc(n, sizeof *tag);
    int rc = 0;
    int workers = o ? o->workers : 0;
#ifdef SERVESIM_MPI
    if (par_mpi_on && par_size_v > 1 && workers != 1) {
        rc = par_mpi(o, n, fn, ctx, tag, e);
        goto out;
    }
#endif
    if (workers == 1 || local_workers(o, n) == 1) {
        for (uint32_t j = 0; j < n; j++) {
            tag[j] = run_one(fn, ctx, j);
            if (o && o->progress) o->progress(o->progress_ctx, j + 1, n);
        }
    } else {
        rc = par_local(o, n, fn, ctx, tag, e);
    }
#ifdef SERVESIM_MPI
out:
#endif
    if (rc == 0) rc = untag(n, tag, results, e);
    else
        for (uint32_t j = 0; j < n; j++) free(tag[j]);
    free(tag);
    return rc;
}
