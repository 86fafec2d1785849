/*
 * tasks.h -- agent and session tasks: end-to-end time of a chain of
 * requests split into where it went, and what speeding up one part buys.
 *
 * A task is a chain of requests linked by next_req (workload.h): a
 * session's turns, an agent's model calls, a closed-loop client's
 * requests.  Between two links the chain waits outside the engine: an
 * agent's tool call (tool_ms), a user's think time, a client's overheads.
 * For a task whose every request finished, with turn k arriving at a_k,
 * first admitted at s_k, first token at f_k and finishing at e_k:
 *
 *   queue   = sum (s_k - a_k)          waiting for admission
 *   prefill = sum (f_k - s_k)          admission to first token
 *   decode  = sum (e_k - f_k)          first to last token
 *   tool    = sum (a_{k+1} - e_k)      outside the engine between turns
 *   total   = e_last - a_first = queue + prefill + decode + tool   (exact)
 *
 * (A preempted request's lost time falls in the phase it was in.)  A task
 * with a cancelled or rejected link, or one still running, is counted as
 * incomplete and left out of the split.
 *
 * Amdahl (chapter 8, figure 8-36): a part that is a fraction f of the task,
 * made s times faster, speeds the task up 1 / ((1 - f) + f / s).
 */
#ifndef SERVESIM_TASKS_H
#define SERVESIM_TASKS_H

#include <stdint.h>

#include "request.h"

enum { TASK_QUEUE = 0, TASK_PREFILL, TASK_DECODE, TASK_TOOL, TASK_N_PARTS };
extern const char *const tasks_part_names[]; /* "queue", "prefill", "decode", "tool" */

/* One task's row: its first request's index, links, and seconds. */
typedef struct TaskRow {
    uint32_t first;              /* index of its first request */
    uint32_t turns;
    int complete;                /* every link finished */
    double total_s;
    double part_s[TASK_N_PARTS];
} TaskRow;

/* Over the complete tasks (all zero when the run has no chain of two or
 * more requests: has_tasks = 0). */
typedef struct TaskSummary {
    int has_tasks;
    uint32_t tasks, complete, turns; /* turns of the complete tasks */
    double mean_total_s;
    double mean_part_s[TASK_N_PARTS];
} TaskSummary;

/* The task rows of n requests (malloc'd, *n_rows of them; NULL when there
 * are none) -- chains start at untriggered requests. */
TaskRow *tasks_rows(const Request *reqs, uint32_t n, uint32_t *n_rows);
void tasks_summarize(const Request *reqs, uint32_t n, TaskSummary *out);
/* A streamed run's tasks (requests with Request.task, task_link and
 * task_last: slots.h chains): each link is added as it leaves, links of a
 * task in chain order, and the rows are folded in task order, as
 * tasks_summarize folds them, so the sums round alike.  It holds the
 * window of tasks begun and not yet folded (a ring indexed by task), not
 * the run.  on_row, if set, sees every row in task order with its first
 * request's id. */
typedef struct TaskOpen TaskOpen;
typedef struct TaskAcc {
    TaskOpen *ring;
    uint32_t cap;                /* a power of two */
    uint64_t base;               /* the first task not yet folded: ring[base % cap] */
    uint64_t top;                /* one past the largest task seen */
    int linked;                  /* some task has two links or more */
    uint64_t held;               /* links that waited for an earlier one of their task */
    int out_of_order;            /* NEVER: a link twice or after its task's end (an internal error) */
    TaskSummary sum;             /* the sums so far (means once finished) */
    void (*on_row)(void *ctx, const TaskRow *row, const char *first_id);
    void *ctx;
} TaskAcc;
void tasks_acc_init(TaskAcc *a);
void tasks_acc_add(TaskAcc *a, const Request *r);
/* Every task folded: the summary (has_tasks as tasks_summarize sets it)
 * into *out; -1 when a task never finished or a link came twice. */
int tasks_acc_finish(TaskAcc *a, TaskSummary *out);
void tasks_acc_free(TaskAcc *a);

/* Task speed-up when a fraction f of it runs s times faster (s > 0). */
double tasks_amdahl(double f, double s);

#endif
