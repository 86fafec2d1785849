/*
 * plot.c -- the plot driver: data directory, params.gp, running gnuplot,
 * atomic outputs, and the `servesim plot` command (see plot.h).
 *
 * gnuplot runs as a child process (fork + execvp; $SERVESIM_GNUPLOT names
 * another binary) with its stderr passed through, so a script error shows
 * gnuplot's own message and line.  It writes to a temporary file beside
 * the output, which is renamed once gnuplot exits 0 and the file is not
 * empty.
 */
/* realpath is XSI */
#define _XOPEN_SOURCE 700
#include "plot.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "outfile.h"
#include "paths.h"
#include "plot_kind.h"

#define PLOT_PATH_MAX 4096

const char plot_kinds_help[] =
    "  cdf       TTFT, TPOT and E2E CDFs of one or more run reports (run --json), SLO lines drawn\n"
    "  timeline  per-request lanes (queueing, prefill, decode steps) of a run report, a replay\n"
    "            schedule or a trace (run --trace-events; shows prefill chunks); up to 4 panels\n"
    "  kv        KV blocks used, running and waiting requests over time (run --iterations-csv)\n"
    "  batch     tokens per iteration (prefill vs decode) and iteration time (run --iterations-csv)\n"
    "  roofline  calibration measurements (calib CSV) against a profile's fitted roofline per operator\n"
    "            (inputs: MEASUREMENTS.csv... PROFILE, a name in models/profiles/ or a .json path)\n"
    "  rate      goodput and completion throughput vs arrival rate with 95% CI bands and the knee\n"
    "            (sweep --json)\n"
    "  pareto    $ per 1M good tokens vs p99 latency of a plan's candidates, the frontier (plan --json)\n"
    "  scatter   measured vs predicted mean TTFT and TPOT per row, one colour per slice, y = x and +-20%\n"
    "            lines, log-log (validate --json)\n";

static const char usage_plot[] =
    "usage: servesim plot KIND INPUT... -o FILE.png|FILE.svg [--title T] [--data DIR]\n"
    "\n"
    "kinds:\n"
    "%s"
    "\n"
    "  -o FILE       the picture: PNG (pngcairo) or SVG by the extension, 1200x800\n"
    "  --title T     the title (default: the kind and the inputs)\n"
    "  --data DIR    where the data files, params.gp and plot.sh go (default: FILE without\n"
    "                its extension + .data); rerun or edit by hand: sh DIR/plot.sh\n"
    "\n"
    "Needs gnuplot (make deps installs gnuplot-nox; $SERVESIM_GNUPLOT names another binary).\n";

/* snprintf that reports truncation instead of warning about it */
static int plot_fmt(char *buf, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int plot_fmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

const char *plot_scripts_dir(char *buf, size_t n)
{
    /* the models directory's parent is the data root (paths.c) */
    const char *m = paths_models_dir();
    size_t len = strlen(m);
    if (len >= 7 && !strcmp(m + len - 7, "/models")) len -= 7;
    snprintf(buf, n, "%.*s/plots", (int)len, m);
    return buf;
}

int plot_write_atomic(const char *path, const char *data, size_t len, Err *e)
{
    OutFile o;
    FILE *f = outfile_open(&o, path, e);
    if (!f) return -1;
    errno = 0;
    if (len && fwrite(data, 1, len, f) != len) {
        /* the error's own errno (ENOSPC, EFBIG), which ferror would lose */
        int err = errno;
        outfile_abort(&o);
        return err_set(e, "%s: cannot write: %s", path, err ? strerror(err) : "short write");
    }
    return outfile_commit(&o, e);
}

void plotbuf_open(PlotBuf *b)
{
    b->text = NULL;
    b->len = 0;
    b->on_disk = 0;
    b->f = open_memstream(&b->text, &b->len);
    if (!b->f) {
        fprintf(stderr, "servesim: out of memory\n");
        abort();
    }
}

int plotbuf_open_file(const PlotCtx *ctx, PlotBuf *b, const char *name, Err *e)
{
    char path[PLOT_PATH_MAX];
    if (plot_fmt(path, sizeof path, "%s/%s", ctx->dir, name) < 0) return err_set(e, "%s: path too long", ctx->dir);
    b->text = NULL;
    b->len = 0;
    b->on_disk = 1;
    b->f = outfile_open(&b->out, path, e);
    return b->f ? 0 : -1;
}

void plotbuf_discard(PlotBuf *b)
{
    if (b->on_disk && b->f) outfile_abort(&b->out);
    else if (b->f) fclose(b->f);
    free(b->text);
    b->f = NULL;
    b->text = NULL;
}

int plotbuf_commit(const PlotCtx *ctx, PlotBuf *b, const char *name, Err *e)
{
    if (b->on_disk) {
        b->f = NULL;
        return outfile_commit(&b->out, e);
    }
    fclose(b->f);
    b->f = NULL;
    char path[PLOT_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", ctx->dir, name);
    int rc = plot_write_atomic(path, b->text, b->len, e);
    free(b->text);
    b->text = NULL;
    return rc;
}

void plot_gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        if (*s == '\n' || *s == '\r') {
            fputs(*s == '\n' ? "'.\"\\n\".'" : "'.\"\\r\".'", f);
            continue;
        }
        fputc(*s, f);
    }
    fputc('\'', f);
}

void plot_param_str(FILE *f, const char *name, const char *s)
{
    fprintf(f, "%s = ", name);
    plot_gp_str(f, s);
    fputc('\n', f);
}

void plot_param_num(FILE *f, const char *name, double v)
{
    fprintf(f, "%s = %.12g\n", name, v);
}

const char *plot_label(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const PlotKind *plot_find_kind(const char *name)
{
    for (int i = 0; i < plot_kind_count; i++)
        if (!strcmp(plot_kind_table[i].name, name)) return &plot_kind_table[i];
    return NULL;
}

static const char *plot_kind_names(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < plot_kind_count && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", plot_kind_table[i].name);
    return buf;
}

static int plot_mkdir(const char *dir, Err *e)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return err_set(e, "%s: exists and is not a directory (wanted the plot's data directory)", dir);
    }
    if (mkdir(dir, 0755) != 0) return err_set(e, "%s: cannot create the data directory: %s", dir, strerror(errno));
    return 0;
}

/* Runs argv[0] with argv; returns its exit status, 127 when it could not
 * be started, or -1 when fork failed. */
/* Whether the picture at path is whole: a PNG from its signature to its
 * IEND chunk, an SVG closed by </svg> (then only white space); -1 and why
 * otherwise. */
static int plot_picture_whole(const char *path, int svg, char *why, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, n, "cannot read it back: %s", strerror(errno));
        return -1;
    }
    unsigned char head[8] = {0}, tail[64] = {0};
    size_t nh = fread(head, 1, sizeof head, f);
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long)sizeof tail ? size - (long)sizeof tail : 0;
    size_t nt = size > 0 && fseek(f, from, SEEK_SET) == 0 ? fread(tail, 1, sizeof tail, f) : 0;
    fclose(f);
    if (svg) {
        while (nt > 0 && (tail[nt - 1] == '\n' || tail[nt - 1] == ' ' || tail[nt - 1] == '\r' || tail[nt - 1] == '\t'))
            nt--;
        if (nt >= 6 && !memcmp(tail + nt - 6, "</svg>", 6)) return 0;
        snprintf(why, n, "%ld bytes that do not end with </svg>", size);
        return -1;
    }
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    if (nh != 8 || memcmp(head, sig, 8)) {
        snprintf(why, n, "%ld bytes without the PNG signature", size);
        return -1;
    }
    if (nt < 12 || memcmp(tail + nt - 12, iend, 12)) {
        snprintf(why, n, "%ld bytes that do not end with the PNG IEND chunk", size);
        return -1;
    }
    return 0;
}

static int plot_spawn(char *const argv[])
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int plot_render(const PlotJob *job, Err *e)
{
    char names[256];
    const PlotKind *k = plot_find_kind(job->kind);
    if (!k)
        return err_set(e, "plot: unknown kind \"%s\"; expected one of %s", job->kind,
                       plot_kind_names(names, sizeof names));
    if (job->n_inputs < k->min_inputs || job->n_inputs > k->max_inputs)
        return err_set(e, "plot %s: got %d input file(s), expected %d to %d", k->name, job->n_inputs, k->min_inputs,
                       k->max_inputs);
    if (!job->out) return err_set(e, "plot %s: no output file (-o FILE.png or FILE.svg)", k->name);
    const char *dot = strrchr(job->out, '.');
    const char *slash = strrchr(job->out, '/');
    if (dot && slash && dot < slash) dot = NULL;
    int svg = dot && !strcmp(dot, ".svg");
    if (!dot || (!svg && strcmp(dot, ".png")))
        return err_set(e, "%s: the output's extension must be .png or .svg, got \"%s\"", job->out, dot ? dot : "");
    char out_abs[PLOT_PATH_MAX], dir[PLOT_PATH_MAX], dir_abs[PLOT_PATH_MAX];
    if (paths_absolute(job->out, out_abs, sizeof out_abs, e) < 0) return -1;
    if (strpbrk(out_abs, "'\"\n\r"))
        return err_set(e, "%s: the output path must not contain quotes or line breaks (gnuplot reads it as a string)",
                       job->out);
    if (job->data_dir) snprintf(dir, sizeof dir, "%s", job->data_dir);
    else snprintf(dir, sizeof dir, "%.*s.data", (int)(dot - job->out), job->out);
    if (plot_mkdir(dir, e) < 0) return -1;
    if (!realpath(dir, dir_abs)) return err_set(e, "%s: %s", dir, strerror(errno));

    PlotBuf params;
    plotbuf_open(&params);
    PlotCtx ctx = {job, dir_abs, params.f};
    if (k->write(&ctx, e) < 0) {
        plotbuf_discard(&params);
        return -1;
    }
    char *kind_params = NULL;
    size_t kind_len = 0;
    fclose(params.f);
    params.f = NULL;
    kind_params = params.text;
    kind_len = params.len;

    char scripts[PLOT_PATH_MAX], script[PLOT_PATH_MAX];
    plot_scripts_dir(scripts, sizeof scripts);
    plot_fmt(script, sizeof script, "%s/%s.gp", scripts, k->script);
    if (access(script, R_OK) != 0) {
        free(kind_params);
        return err_set(e, "plot %s: cannot read the gnuplot script %s: %s (set SERVESIM_DATA to the source tree)",
                       k->name, script, strerror(errno));
    }

    PlotBuf pb;
    plotbuf_open(&pb);
    fprintf(pb.f, "# params.gp -- written by servesim plot %s; the script %s reads these and the data\n", k->name,
                  script);
    fprintf(pb.f, "# files in datadir.  Rerun by hand: sh plot.sh (gnuplot params.gp %s.gp)\n", k->script);
    if (svg) fputs("set terminal svg size 1200,800 dynamic font \"sans,14\" noenhanced background rgb \"white\"\n",
                   pb.f);
    else fputs("set terminal pngcairo size 1200,800 font \"sans,12\" noenhanced background rgb \"white\"\n", pb.f);
    /* servesim names a temporary file beside the output (servesim_out, set
     * before this file is read), renamed onto it once whole; by hand
     * (plot.sh) the output itself */
    plot_param_str(pb.f, "out_file", out_abs);
    fputs("set output (exists(\"servesim_out\") ? servesim_out : out_file)\n", pb.f);
    plot_param_str(pb.f, "datadir", dir_abs);
    char title[1024];
    if (job->title) {
        snprintf(title, sizeof title, "%s", job->title);
    } else {
        size_t used = (size_t)snprintf(title, sizeof title, "servesim %s:", k->name);
        for (int i = 0; i < job->n_inputs && used < sizeof title; i++)
            used += (size_t)snprintf(title + used, sizeof title - used, " %s", plot_label(job->inputs[i]));
    }
    plot_param_str(pb.f, "plot_title", title);
    fwrite(kind_params, 1, kind_len, pb.f);
    free(kind_params);
    if (plotbuf_commit(&ctx, &pb, "params.gp", e) < 0) return -1;

    char sh[3 * PLOT_PATH_MAX];
    int shn = snprintf(sh, sizeof sh, "#!/bin/sh\n# rerun the plot by hand (edit %s or params.gp first)\n"
                                      "cd \"$(dirname \"$0\")\" && exec gnuplot params.gp \"%s\"\n", script, script);
    char shpath[PLOT_PATH_MAX];
    plot_fmt(shpath, sizeof shpath, "%s/plot.sh", dir_abs);
    if (plot_write_atomic(shpath, sh, (size_t)shn, e) < 0) return -1;

    /* gnuplot writes to a temporary file beside the output, renamed onto
     * it: not over a device or FIFO (as root, /dev/null itself) */
    struct stat ost;
    if (stat(out_abs, &ost) == 0 && !S_ISREG(ost.st_mode))
        return err_set(e, "plot: -o %s is not a regular file; expected a picture file to write", job->out);
    char tmp[PLOT_PATH_MAX], setout[2 * PLOT_PATH_MAX + 32], pfile[PLOT_PATH_MAX];
    if (plot_fmt(tmp, sizeof tmp, "%s.tmpXXXXXX", out_abs) < 0) return err_set(e, "%s: path too long", job->out);
    int fd = mkstemp(tmp);
    if (fd < 0) return err_set(e, "%s: cannot write: %s", job->out, strerror(errno));
    close(fd);
    chmod(tmp, 0644);
    /* the temporary name holds the user's path: quoted as every string */
    FILE *sm = fmemopen(setout, sizeof setout, "w");
    if (!sm) return err_set(e, "plot: %s", strerror(errno));
    fputs("servesim_out = ", sm);
    plot_gp_str(sm, tmp);
    fputc('\0', sm);
    fclose(sm);
    plot_fmt(pfile, sizeof pfile, "%s/params.gp", dir_abs);
    const char *gp = getenv("SERVESIM_GNUPLOT");
    if (!gp || !*gp) gp = "gnuplot";
    char gpbin[PLOT_PATH_MAX], dash_e[] = "-e";
    plot_fmt(gpbin, sizeof gpbin, "%s", gp);
    char *argv[] = {gpbin, dash_e, setout, pfile, script, NULL};
    int st = plot_spawn(argv);
    struct stat sb;
    if (st != 0 || stat(tmp, &sb) != 0 || sb.st_size == 0) {
        remove(tmp);
        if (st == 127)
            return err_set(e, "plot: gnuplot is not installed (could not run \"%s\"); install it (make deps installs "
                              "gnuplot-nox) or set SERVESIM_GNUPLOT; the data files are in %s", gp, dir_abs);
        if (st == 0) return err_set(e, "plot %s: gnuplot wrote an empty picture (see its messages above)", k->name);
        return err_set(e, "plot %s: gnuplot failed with status %d running %s (see its messages above; data in %s)",
                       k->name, st, script, dir_abs);
    }
    /* gnuplot exits 0 on a full disk or a file-size limit, leaving part of
     * the picture: it must end as its format ends */
    char why[160];
    if (plot_picture_whole(tmp, svg, why, sizeof why) < 0) {
        remove(tmp);
        return err_set(e, "plot %s: gnuplot left a torn picture for %s (%s; a full disk or a file-size limit?); "
                          "nothing written", k->name, job->out, why);
    }
    if (outfile_rename(tmp, out_abs) != 0) {
        int err = errno;
        remove(tmp);
        return err_set(e, "%s: cannot write: %s", job->out, strerror(err));
    }
    return 0;
}

int plot_main(int argc, char **argv)
{
    PlotJob job = {0};
    char usage[4096];
    snprintf(usage, sizeof usage, usage_plot, plot_kinds_help);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--title") || !strcmp(a, "--data")) {
            if (++i >= argc) {
                fprintf(stderr, "servesim: %s needs a value\n\n%s", a, usage);
                return 2;
            }
            if (!strcmp(a, "--title")) job.title = argv[i];
            else if (!strcmp(a, "--data")) job.data_dir = argv[i];
            else job.out = argv[i];
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "servesim: unknown option: %s\n\n%s", a, usage);
            return 2;
        } else if (!job.kind) {
            job.kind = a;
        } else if (job.n_inputs < PLOT_MAX_INPUTS) {
            job.inputs[job.n_inputs++] = a;
        } else {
            fprintf(stderr, "servesim: plot: more than %d inputs\n", PLOT_MAX_INPUTS);
            return 2;
        }
    }
    if (!job.kind) {
        fprintf(stderr, "servesim: plot: a kind is required\n\n%s", usage);
        return 2;
    }
    if (!job.out) {
        fprintf(stderr, "servesim: plot: -o FILE.png or FILE.svg is required\n\n%s", usage);
        return 2;
    }
    Err e = {0};
    if (plot_render(&job, &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 1;
    }
    return 0;
}
