/*
 * amdahlcmd.c -- `servesim amdahl`: a task's time as parts, and what making
 * one part faster buys the whole (chapter 8, figure 8-36 and exercise 8-8).
 *
 * A part that is a fraction f of the task, made s times faster, speeds the
 * task up 1 / ((1 - f) + f / s) (tasks_amdahl).  The parts come from the
 * command line (--part NAME=SECONDS) or from a run's JSON report, whose
 * summary.tasks.mean_s holds the mean task's queue, prefill, decode and
 * tool seconds (sim/tasks.h).  Printed: each part's share, the task when
 * one part alone is halved, the limit when it takes no time at all, and,
 * with --speedup NAME=S (and --add SECONDS of new work, e.g. preparing
 * drafts), the new task time, the net speed-up and the added time at which
 * the change stops saving time.
 */
#include "amdahlcmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jsonio.h"
#include "tasks.h"

#define AMDAHL_PARTS_MAX 16

static const char usage[] =
    "usage: servesim amdahl (--part NAME=SECONDS ... | --report RUN.json)\n"
    "                       [--speedup NAME=S ...] [--add SECONDS] [--json]\n"
    "\n"
    "A task's time as parts: the task when each part alone is halved, the\n"
    "Amdahl limit when it takes no time (1 / (1 - f)), and with --speedup the new\n"
    "time, net speed-up 1 / ((1 - f) + f / s) and, with --add (new work the change\n"
    "brings, such as preparing drafts), the added time at which it stops paying.\n"
    "--report takes the mean task split (queue, prefill, decode, tool) of a run's\n"
    "JSON report (servesim run --json) of an agent or session workload.\n"
    "\n"
    "  servesim amdahl --part prefill=20 --part decode=50 --part tool=30 \\\n"
    "                  --speedup decode=4 --add 8\n";

typedef struct Part {
    char name[32];
    double s;        /* seconds */
    double speedup;  /* 1 = unchanged */
} Part;

static int bad(const char *msg, const char *arg)
{
    fprintf(stderr, "servesim amdahl: %s%s%s\n\n%s", msg, arg ? ": " : "", arg ? arg : "", usage);
    return 2;
}

/* "NAME=VALUE" with VALUE in [lo, hi]. */
static int name_value(const char *arg, double lo, double hi, char *name, size_t n, double *v)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= n) return -1;
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = '\0';
    char *end;
    double x = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !(x >= lo && x <= hi)) return -1;
    *v = x;
    return 0;
}

static int find(const Part *p, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].name, name)) return i;
    return -1;
}

/* The mean task's parts from a run report's summary.tasks.mean_s. */
static int from_report(const char *path, Part *p, int *n)
{
    Err e;
    cJSON *root = jsonio_parse_file(path, &e);
    if (!root) {
        fprintf(stderr, "servesim amdahl: %s\n", e.msg);
        return 1;
    }
    const cJSON *su = cJSON_GetObjectItemCaseSensitive(root, "summary");
    const cJSON *t = su ? cJSON_GetObjectItemCaseSensitive(su, "tasks") : NULL;
    const cJSON *m = t ? cJSON_GetObjectItemCaseSensitive(t, "mean_s") : NULL;
    if (!cJSON_IsObject(m)) {
        fprintf(stderr, "servesim amdahl: %s: no summary.tasks.mean_s; expected the JSON report of a run whose "
                        "workload has sessions or agent tasks (servesim run SCENARIO --json FILE)\n", path);
        cJSON_Delete(root);
        return 1;
    }
    for (int k = 0; k < TASK_N_PARTS; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, tasks_part_names[k]);
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0)) {
            fprintf(stderr, "servesim amdahl: %s: summary.tasks.mean_s.%s: expected a number of seconds >= 0\n",
                    path, tasks_part_names[k]);
            cJSON_Delete(root);
            return 1;
        }
        snprintf(p[*n].name, sizeof p[*n].name, "%s", tasks_part_names[k]);
        p[*n].s = v->valuedouble;
        p[*n].speedup = 1;
        (*n)++;
    }
    cJSON_Delete(root);
    return 0;
}

int amdahlcmd_main(int argc, char **argv)
{
    Part p[AMDAHL_PARTS_MAX];
    int n = 0, json = 0, has_speedup = 0;
    double add = 0;
    const char *report = NULL;
    struct { char name[32]; double s; } sp[AMDAHL_PARTS_MAX];
    int n_sp = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (i + 1 >= argc) return bad("missing value after", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--part")) {
            if (n >= AMDAHL_PARTS_MAX) return bad("too many parts (at most 16)", v);
            if (name_value(v, 0, 1e12, p[n].name, sizeof p[n].name, &p[n].s) < 0)
                return bad("--part: expected NAME=SECONDS with SECONDS in [0, 1e12]", v);
            if (find(p, n, p[n].name) >= 0) return bad("--part: the same part twice", v);
            p[n++].speedup = 1;
        } else if (!strcmp(a, "--speedup")) {
            if (n_sp >= AMDAHL_PARTS_MAX) return bad("too many --speedup (at most 16)", v);
            if (name_value(v, 1e-9, 1e12, sp[n_sp].name, sizeof sp[n_sp].name, &sp[n_sp].s) < 0)
                return bad("--speedup: expected NAME=FACTOR with FACTOR in (0, 1e12] (2 = twice as fast)", v);
            n_sp++;
            has_speedup = 1;
        } else if (!strcmp(a, "--add")) {
            char *end;
            add = strtod(v, &end);
            if (end == v || *end || !(add >= 0 && add <= 1e12))
                return bad("--add: expected the seconds of new work in [0, 1e12]", v);
        } else if (!strcmp(a, "--report")) {
            report = v;
        } else {
            return bad("unknown option", a);
        }
    }
    if (report && n) return bad("--report and --part exclude each other", NULL);
    if (report && from_report(report, p, &n) != 0) return 1;
    if (!n) return bad("no parts: give --part NAME=SECONDS (at least one) or --report RUN.json", NULL);
    for (int k = 0; k < n_sp; k++) {
        int i = find(p, n, sp[k].name);
        if (i < 0) return bad("--speedup names no part", sp[k].name);
        p[i].speedup = sp[k].s;
    }
    double total = 0, sped = 0;
    for (int i = 0; i < n; i++) {
        total += p[i].s;
        sped += p[i].s / p[i].speedup;
    }
    if (!(total > 0)) return bad("the parts add up to 0 s", NULL);
    double after = sped + add, saved = total - sped;
    if (json) {
        cJSON *root = cJSON_CreateObject();
        jsonio_add_num(root, "total_s", total);
        cJSON *arr = cJSON_AddArrayToObject(root, "parts");
        for (int i = 0; i < n; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", p[i].name);
            jsonio_add_num(o, "s", p[i].s);
            jsonio_add_num(o, "share", p[i].s / total);
            jsonio_add_num(o, "halved_total_s", total - p[i].s / 2);
            jsonio_add_num(o, "halved_speedup", tasks_amdahl(p[i].s / total, 2));
            if (p[i].s < total) jsonio_add_num(o, "limit_speedup", 1 / (1 - p[i].s / total));
            else cJSON_AddNullToObject(o, "limit_speedup");
            cJSON_AddItemToArray(arr, o);
        }
        if (has_speedup) {
            jsonio_add_num(root, "added_s", add);
            jsonio_add_num(root, "new_total_s", after);
            jsonio_add_num(root, "net_speedup", total / after);
            jsonio_add_num(root, "break_even_added_s", saved);
        }
        char *txt = cJSON_Print(root);
        puts(txt);
        free(txt);
        cJSON_Delete(root);
        return 0;
    }
    printf("task: %.3f s =", total);
    for (int i = 0; i < n; i++) printf("%s %s %.3f (%.1f%%)", i ? " +" : "", p[i].name, p[i].s, 100 * p[i].s / total);
    printf("\n\n  %-12s %14s %10s %16s\n", "part", "halved: task", "speed-up", "limit (part = 0)");
    for (int i = 0; i < n; i++) {
        char lim[32];
        if (p[i].s < total) snprintf(lim, sizeof lim, "%.3fx", 1 / (1 - p[i].s / total));
        else snprintf(lim, sizeof lim, "unbounded");
        printf("  %-12s %12.3f s %9.3fx %16s\n", p[i].name, total - p[i].s / 2, tasks_amdahl(p[i].s / total, 2), lim);
    }
    if (has_speedup) {
        printf("\n  with");
        int first = 1;
        for (int i = 0; i < n; i++)
            if (p[i].speedup != 1) {
                printf("%s %s %gx faster", first ? "" : ",", p[i].name, p[i].speedup);
                first = 0;
            }
        if (add > 0) printf(" + %g s added", add);
        printf(": %.3f s, net speed-up %.3fx\n", after, total / after);
        printf("  the change saves %.3f s of work: it stops paying when the added time reaches %.3f s\n", saved,
               saved);
    }
    return 0;
}
