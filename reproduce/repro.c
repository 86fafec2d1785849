/*
 * repro.c -- `servesim reproduce`: the chapters' worked examples, the book's
 * value beside servesim's.
 *
 * One row of `cases` is one number of a chapter: where it is (seed file,
 * section, table/figure/exercise), the input file in workloads/chapters/
 * that servesim computes it from (a scenario it runs, a schedule it
 * replays, or a parameter file for one of the calculators of
 * repro_calc_int.h), the expression that picks the value out of the computed document, and the
 * book's value with its tolerance.  Only the book value and the tolerance
 * are typed here; the computed value always comes from the simulator's code
 * on the input file, so editing the file and rerunning shows the effect.
 * A case that cannot be computed (a feature not built yet, or inputs the
 * chapter does not give) says why in `pending` and is listed, never run or
 * counted as a failure; switching it on is adding its input file and
 * filling in its expression.
 *
 * Comparison: '=' |computed - book| <= tol; '<' computed <= book; '>'
 * computed >= book (for claims such as "more than tenfold").
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonio.h"
#include "outfile.h"
#include "paths.h"
#include "plancmd.h"
#include "plot.h"
#include "repro.h"
#include "repro_calc.h"

typedef struct ReproCase {
    const char *name;
    const char *chapter;  /* seed file: "000" (ch. 31), "002", "003" (ch. 8) */
    const char *where;    /* section, table, figure or exercise */
    ReproKind kind;
    const char *file;     /* in workloads/chapters/ */
    const char *arg;      /* run: NULL; replay: a fixed window "T0,T1" (ms) */
    const char *expr;     /* the value in the computed document (repro_get) */
    double scale;         /* computed = scale x expr */
    const char *unit;
    char cmp;             /* '=', '<', '>' */
    double book, tol;
    const char *note;
    const char *pending;  /* the missing feature (NULL: runs today) */
    int beside;           /* run: also price it with the GPU's calibrated roofline */
    const char *bexpr;    /* calc: the calibrated roofline's value in the same document */
} ReproCase;

#define RUN REPRO_RUN
#define RPL REPRO_REPLAY
#define CALC REPRO_CALC
#define SWP REPRO_SWEEP
/* a case that runs today */
#define C(n, ch, wh, k, f, a, x, sc, u, cm, b, t, note) {n, ch, wh, k, f, a, x, sc, u, cm, b, t, note, NULL, 0, NULL}
/* a calculator case with the calibrated roofline's value (bx) beside it */
#define CR(n, ch, wh, k, f, a, x, sc, u, cm, b, t, note, bx) {n, ch, wh, k, f, a, x, sc, u, cm, b, t, note, NULL, 0, bx}
/* the same, with the calibrated roofline's prediction beside it */
#define CB(n, ch, wh, k, f, a, x, sc, u, cm, b, t, note) {n, ch, wh, k, f, a, x, sc, u, cm, b, t, note, NULL, 1, NULL}
/* a case waiting for a feature */
#define P(n, ch, wh, b, u, feat, note) {n, ch, wh, CALC, NULL, NULL, NULL, 1, u, '=', b, 0, note, feat, 0, NULL}

#define T311S "ch31_table_31_1_serial.json"
#define T311C "ch31_table_31_1_continuous.json"
#define FOURC "ch8_four_requests_continuous.json"
#define FOURS "ch8_four_requests_static.json"
#define FOURK "ch8_four_requests_chunked.json"
#define CAP2K "ch8_capacity_2k.json"
#define CAP8K "ch8_capacity_8k.json"
#define READ "ch8_read_per_token.json"
#define STEP "ch8_step_model.json"
#define FLOPS "ch8_flops_and_bytes.json"
#define SPEC "ch8_speculation.json"
#define BOARD "ch8_design_board.json"
#define GVR "rests on the chapter's measured retrieval experiment; the request lengths are assumptions of the input file (its description), 3 seeds, so the tolerance is wide"
#define NOREPLAY "inputs the chapter does not give: its 12-round agent replay (each round's token ids and lengths, the interfering requests and their timing) is not in the text, only its totals (19,556 input tokens = 16,304 hit + 3252 reprocessed); servesim's agent workloads (issue 18) and prefix cache would run it, but any request list typed in here would be fitted to the answer"
#define NOPREEMPT "inputs the chapter does not give: the workload of its 1 GiB pool observation (the requests, their lengths and arrival times) is not stated, only that one preemption rescheduled 1805 tokens and a 2 GiB pool had none; servesim's engine preempts and recomputes, but a workload typed in here would be fitted to the answer"
#define NOV4 "inputs the chapter does not give: DeepSeek V4/V4.1's layer counts, latent sizes, SWA window and compressed global KV are not stated (only the totals 6.953 + 2.578 = 9.531 MiB and 30.521 MiB), and no such model file exists to derive them from (issue 17 found the same)"

static const ReproCase cases[] = {
    /* ---------------------------------------------------------------- 000: chapter 31 */
    C("t31.2-ttft-A-serial", "000", "31.2 table 31.2, A serial TTFT", RPL, T311S, NULL, "requests[A].ttft_s", 1e3, "ms", '=', 100, 1e-6, NULL),
    C("t31.2-ttft-B-serial", "000", "31.2 table 31.2, B serial TTFT (260 - 20)", RPL, T311S, NULL, "requests[B].ttft_s", 1e3, "ms", '=', 240, 1e-6, NULL),
    C("t31.2-ttft-C-serial", "000", "31.2 table 31.2, C serial TTFT", RPL, T311S, NULL, "requests[C].ttft_s", 1e3, "ms", '=', 320, 1e-6, NULL),
    C("t31.2-ttft-A-continuous", "000", "31.2 table 31.2, A continuous TTFT", RPL, T311C, NULL, "requests[A].ttft_s", 1e3, "ms", '=', 100, 1e-6, NULL),
    C("t31.2-ttft-B-continuous", "000", "31.2 table 31.2, B continuous TTFT (150 - 20)", RPL, T311C, NULL, "requests[B].ttft_s", 1e3, "ms", '=', 130, 1e-6, NULL),
    C("t31.2-ttft-C-continuous", "000", "31.2 table 31.2, C continuous TTFT", RPL, T311C, NULL, "requests[C].ttft_s", 1e3, "ms", '=', 140, 1e-6, NULL),
    C("t31.2-tpot-A-serial", "000", "31.2 table 31.2, A serial TPOT (gaps 40, 40)", RPL, T311S, NULL, "requests[A].tpot_s", 1e3, "ms", '=', 40, 1e-6, NULL),
    C("t31.2-tpot-B-serial", "000", "31.2 table 31.2, B serial TPOT", RPL, T311S, NULL, "requests[B].tpot_s", 1e3, "ms", '=', 40, 1e-6, NULL),
    C("t31.2-tpot-A-continuous", "000", "31.2 table 31.2, A continuous TPOT (gaps 50, 50)", RPL, T311C, NULL, "requests[A].tpot_s", 1e3, "ms", '=', 50, 1e-6, NULL),
    C("t31.2-tpot-B-continuous", "000", "31.2 table 31.2, B continuous TPOT", RPL, T311C, NULL, "requests[B].tpot_s", 1e3, "ms", '=', 50, 1e-6, NULL),
    C("t31.2-tpot-C-missing-serial", "000", "31.2 table 31.2, C's TPOT missing: 2 TPOTs of 3 requests", RPL, T311S, NULL, "summary.tpot_s.count", 1, "", '=', 2, 0, "one output: undefined, never a zero that drags the mean down"),
    C("t31.2-tpot-C-missing-continuous", "000", "31.2 table 31.2, C's TPOT missing (continuous)", RPL, T311C, NULL, "summary.tpot_s.count", 1, "", '=', 2, 0, NULL),
    C("s31.2-gaps-A-serial", "000", "31.2 A's gaps after the first token, serial: 40, 40 ms", RPL, T311S, NULL, "requests[A].itl_max_s", 1e3, "ms", '=', 40, 1e-6, NULL),
    C("s31.2-gaps-A-continuous", "000", "31.2 A's gaps, continuous: 50, 50 ms", RPL, T311C, NULL, "requests[A].itl_max_s", 1e3, "ms", '=', 50, 1e-6, NULL),
    C("e31.1-six-outputs", "000", "31.2 example 31.1: all six outputs complete (both schedules)", RPL, T311C, NULL, "summary.throughput.output_tokens", 1, "tokens", '=', 6, 0, NULL),
    C("ex31.1-latency-A-serial", "000", "31.10 answer 1, A request latency serial", RPL, T311S, NULL, "requests[A].e2e_s", 1e3, "ms", '=', 180, 1e-6, NULL),
    C("ex31.1-latency-B-serial", "000", "31.10 answer 1, B request latency serial (300 - 20)", RPL, T311S, NULL, "requests[B].e2e_s", 1e3, "ms", '=', 280, 1e-6, NULL),
    C("ex31.1-latency-A-continuous", "000", "31.10 answer 1, A request latency continuous", RPL, T311C, NULL, "requests[A].e2e_s", 1e3, "ms", '=', 200, 1e-6, NULL),
    C("ex31.1-latency-B-continuous", "000", "31.10 answer 1, B request latency continuous (200 - 20)", RPL, T311C, NULL, "requests[B].e2e_s", 1e3, "ms", '=', 180, 1e-6, NULL),
    C("e31.4-drain-window-serial", "000", "31.7 example 31.4, serial drain window", RPL, T311S, NULL, "summary.throughput.window_s", 1, "s", '=', 0.360, 1e-9, NULL),
    C("e31.4-drain-window-continuous", "000", "31.7 example 31.4, continuous drain window", RPL, T311C, NULL, "summary.throughput.window_s", 1, "s", '=', 0.200, 1e-9, NULL),
    C("e31.4-throughput-serial", "000", "31.7 example 31.4, 6 / 0.360 output tok/s", RPL, T311S, NULL, "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 16.667, 0.0005, NULL),
    C("e31.4-throughput-continuous", "000", "31.7 example 31.4, 6 / 0.200 output tok/s", RPL, T311C, NULL, "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 30, 1e-6, NULL),
    C("e31.4-window-400-serial", "000", "31.7 example 31.4, fixed 0-400 ms window, serial", RPL, T311S, "0,400", "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 15, 1e-6, NULL),
    C("e31.4-window-400-continuous", "000", "31.7 example 31.4, fixed 0-400 ms window, continuous", RPL, T311C, "0,400", "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 15, 1e-6, NULL),
    C("ex31.2-window-500-serial", "000", "31.10 answer 2, fixed 500 ms window, serial", RPL, T311S, "0,500", "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 12, 1e-6, NULL),
    C("ex31.2-window-500-continuous", "000", "31.10 answer 2, fixed 500 ms window, continuous", RPL, T311C, "0,500", "summary.throughput.output_tokens_per_s", 1, "tok/s", '=', 12, 1e-6, NULL),
    C("e31.4-cost-serial", "000", "31.7 example 31.4, $2/h x 0.360 s", RPL, T311S, NULL, "summary.cost.usd", 1, "$", '=', 0.0002, 1e-10, NULL),
    C("e31.4-cost-continuous", "000", "31.7 example 31.4, $2/h x 0.200 s", RPL, T311C, NULL, "summary.cost.usd", 1, "$", '=', 0.000111111, 1e-9, NULL),
    C("e31.4-cost-per-1k-serial", "000", "31.7 example 31.4, $ per 1k output tokens, serial", RPL, T311S, NULL, "summary.cost.usd_per_1k_output_tokens", 1, "$", '=', 0.033333, 1e-6, NULL),
    C("e31.4-cost-per-1k-continuous", "000", "31.7 example 31.4, $ per 1k output tokens, continuous", RPL, T311C, NULL, "summary.cost.usd_per_1k_output_tokens", 1, "$", '=', 0.018519, 1e-6, NULL),
    C("ex31.6-ttft-cap-good", "000", "31.10 answer 6, hard TTFT cap: no request counts", RPL, "ch31_ttft_cap_contract.json", NULL, "summary.goodput.good_requests", 1, "requests", '=', 0, 0, "every first token past the cap: goodput 0 whatever the throughput"),
    C("ex31.6-ttft-cap-throughput", "000", "31.10 answer 6, ... while completed tokens per second rose", RPL, "ch31_ttft_cap_contract.json", NULL, "summary.throughput.output_tokens_per_s", 1, "tok/s", '>', 16.667, 0, "more than the serial schedule's 16.667 tok/s, and still not an improvement"),
    C("e31.2-full-numerator", "000", "31.4 example 31.2, 4x1 + 2x3 + 1x0 + 1x2", CALC, "ch31_flash_merge.json", NULL, "full_numerator", 1, "", '=', 12, 1e-12, NULL),
    C("e31.2-full-denominator", "000", "31.4 example 31.2, weight sum", CALC, "ch31_flash_merge.json", NULL, "full_denominator", 1, "", '=', 8, 1e-12, NULL),
    C("e31.2-full-output", "000", "31.4 example 31.2, full output 12 / 8", CALC, "ch31_flash_merge.json", NULL, "full", 1, "", '=', 1.5, 1e-12, NULL),
    C("e31.2-block1-numerator", "000", "31.4 example 31.2, first block numerator", CALC, "ch31_flash_merge.json", NULL, "blocks[0].numerator", 1, "", '=', 10, 1e-12, NULL),
    C("e31.2-block1-denominator", "000", "31.4 example 31.2, first block denominator", CALC, "ch31_flash_merge.json", NULL, "blocks[0].denominator", 1, "", '=', 6, 1e-12, NULL),
    C("e31.2-block2-numerator", "000", "31.4 example 31.2, second block numerator", CALC, "ch31_flash_merge.json", NULL, "blocks[1].numerator", 1, "", '=', 2, 1e-12, NULL),
    C("e31.2-merged", "000", "31.4 example 31.2, merged (10 + 2) / (6 + 2)", CALC, "ch31_flash_merge.json", NULL, "merged", 1, "", '=', 1.5, 1e-12, NULL),
    C("e31.2-naive-average", "000", "31.4 example 31.2, wrong: (10/6 + 2/2) / 2", CALC, "ch31_flash_merge.json", NULL, "naive_average", 1, "", '=', 4.0 / 3.0, 1e-12, NULL),
    C("e31.3-accept-paris", "000", "31.5 example 31.3, accept Paris 0.6 / 0.8", CALC, "ch31_spec_paris.json", NULL, "accept[0]", 1, "", '=', 0.75, 1e-12, NULL),
    C("e31.3-accept-lyon", "000", "31.5 example 31.3, accept Lyon always", CALC, "ch31_spec_paris.json", NULL, "accept[1]", 1, "", '=', 1, 1e-12, NULL),
    C("e31.3-accepted-paris-mass", "000", "31.5 example 31.3, accepted Paris mass 0.8 x 0.75", CALC, "ch31_spec_paris.json", NULL, "accepted_mass[0]", 1, "", '=', 0.6, 1e-12, NULL),
    C("e31.3-rejected-mass", "000", "31.5 example 31.3, rejected mass", CALC, "ch31_spec_paris.json", NULL, "rejected_mass", 1, "", '=', 0.2, 1e-12, NULL),
    C("e31.3-residual-lyon", "000", "31.5 example 31.3, residual max(p - q, 0) normalised: [0, 1]", CALC, "ch31_spec_paris.json", NULL, "residual[1]", 1, "", '=', 1, 1e-12, NULL),
    C("e31.3-final-paris", "000", "31.5 example 31.3, final Paris (sampled)", CALC, "ch31_spec_paris.json", NULL, "final[0]", 1, "", '=', 0.6, 0.005, "200,000 seeded draws of the exact verifier"),
    C("e31.3-final-lyon", "000", "31.5 example 31.3, final Lyon 0.2 + 0.2 (sampled)", CALC, "ch31_spec_paris.json", NULL, "final[1]", 1, "", '=', 0.4, 0.005, NULL),
    C("e31.3-resample-p-paris", "000", "31.5 example 31.3, wrong rule: Paris 0.6 + 0.2 x 0.6", CALC, "ch31_spec_paris.json", NULL, "final_resample_p[0]", 1, "", '=', 0.72, 0.005, "resampling from p after a rejection"),
    C("ex31.3-accept-1", "000", "31.10 answer 3, acceptance [0.5, 1]: first", CALC, "ch31_spec_exercise.json", NULL, "accept[0]", 1, "", '=', 0.5, 1e-12, NULL),
    C("ex31.3-accept-2", "000", "31.10 answer 3, acceptance [0.5, 1]: second", CALC, "ch31_spec_exercise.json", NULL, "accept[1]", 1, "", '=', 1, 1e-12, NULL),
    C("ex31.3-rejected-mass", "000", "31.10 answer 3, rejected mass 0.3", CALC, "ch31_spec_exercise.json", NULL, "rejected_mass", 1, "", '=', 0.3, 1e-12, NULL),
    C("ex31.3-residual", "000", "31.10 answer 3, residual [0, 1]", CALC, "ch31_spec_exercise.json", NULL, "residual[1]", 1, "", '=', 1, 1e-12, NULL),
    C("ex31.3-final-1", "000", "31.10 answer 3, final 0.3 (sampled)", CALC, "ch31_spec_exercise.json", NULL, "final[0]", 1, "", '=', 0.3, 0.005, NULL),
    C("ex31.3-final-2", "000", "31.10 answer 3, final 0.7 (sampled)", CALC, "ch31_spec_exercise.json", NULL, "final[1]", 1, "", '=', 0.7, 0.005, NULL),
    C("s31.3-prefix-B", "000", "31.3 prefix reuse: B shares A's first 3 ids", CALC, "ch31_prefix_reuse.json", NULL, "hit_tokens.B", 1, "tokens", '=', 3, 0, NULL),
    C("s31.3-prefix-C", "000", "31.3 prefix reuse: C shares nothing", CALC, "ch31_prefix_reuse.json", NULL, "hit_tokens.C", 1, "tokens", '=', 0, 0, NULL),
    C("ex31.4-word-order", "000", "31.10 answer 4, the same ids in another order: no hit", CALC, "ch31_prefix_reuse.json", NULL, "hit_tokens.D", 1, "tokens", '=', 0, 0, "reuse runs from the start, position by position"),
    C("ex31.4-access-boundary", "000", "31.10 answer 4, same ids, another tenant: no hit", CALC, "ch31_prefix_reuse.json", NULL, "hit_tokens.E", 1, "tokens", '=', 0, 0, "the namespace includes the tenant"),

    /* ---------------------------------------------------------------- 002 */
    C("s002-kv-bytes-formula", "002", "KV bytes = 2 L n_kv d_head b T, Qwen3-8B BF16 per token", CALC, READ, NULL, "kv_bytes_per_token", 1, "B", '=', 147456, 0, "003's k = 2 x 36 x 8 x 128 x 2"),
    C("s002-loop-kv-binds", "002", "the loop: KV pool full when memory binds", RUN, "ch8_capacity_2k_on_demand.json", NULL, "summary.kv.peak_used_blocks / summary.kv.total_blocks", 1, "", '>', 0.97, 0, "can_allocate is where memory becomes a scheduling decision"),
    C("s002-loop-preemptions", "002", "the loop: preemptions rise when the cache is the bottleneck", RUN, "ch8_capacity_2k_on_demand.json", NULL, "summary.preemptions", 1, "", '>', 1, 0, NULL),
    C("s002-loop-slot-reuse", "002", "the loop: a finished request leaves at once and a waiting one joins before the rest finish", RUN, FOURC, NULL, "requests[r0].token_times_s[7] - requests[r2].token_times_s[0]", 1e3, "ms", '>', 0, 0, "Orca's iteration-level scheduling: r2 takes r1's slot while r0 still decodes (case s8.2-static-waits is the opposite)"),

    /* ---------------------------------------------------------------- 003: chapter 8 */
    C("s8.1-kv-per-token", "003", "8.1 k = 2 x 36 x 8 x 128 x 2", CALC, READ, NULL, "kv_bytes_per_token", 1, "B", '=', 147456, 0, NULL),
    C("s8.1-kv-kib-per-token", "003", "8.1 k = 144 KiB / token", CALC, READ, NULL, "kv_kib_per_token", 1, "KiB", '=', 144, 0, NULL),
    C("s8.1-final-tokens", "003", "8.1 capacity: 2048 + 255 tokens", CALC, CAP2K, NULL, "final_tokens", 1, "tokens", '=', 2303, 0, NULL),
    C("s8.1-final-mib-2k", "003", "8.1 capacity: 2304 tokens = 324 MiB", CALC, CAP2K, NULL, "final_mib", 1, "MiB", '=', 324, 1e-9, NULL),
    C("s8.1-prefill-mib-2k", "003", "8.1 capacity: 288 MiB after the prefill", CALC, CAP2K, NULL, "prefill_mib", 1, "MiB", '=', 288, 1e-9, NULL),
    C("s8.1-admit-2k", "003", "8.1 capacity: 12 GiB admits 37 short requests", CALC, CAP2K, NULL, "admitted_final", 1, "requests", '=', 37, 0, NULL),
    C("s8.1-admit-2k-prefill-only", "003", "8.1 capacity: 42 if only the prefill is counted", CALC, CAP2K, NULL, "admitted_prefill_only", 1, "requests", '=', 42, 0, NULL),
    C("s8.1-42-need-13608", "003", "8.1 capacity: 42 requests need 13,608 MiB when done", CALC, CAP2K, NULL, "prefill_admitted_final_mib", 1, "MiB", '=', 13608, 1e-9, NULL),
    C("s8.1-admit-2k-engine", "003", "8.1 capacity through the engine: 37 run at once", RUN, "ch8_capacity_2k_engine.json", NULL, "summary.peak_running", 1, "requests", '=', 37, 0, "50 requests at 0 ms, continuous batching, reserve final"),
    C("s8.1-admit-2k-on-demand", "003", "8.1 capacity: 42 admitted on the prefill's KV alone ...", RUN, "ch8_capacity_2k_on_demand.json", NULL, "summary.peak_running", 1, "requests", '=', 42, 0, NULL),
    C("s8.1-on-demand-runs-out", "003", "8.1 ... run out of memory halfway (preemptions)", RUN, "ch8_capacity_2k_on_demand.json", NULL, "summary.preemptions", 1, "", '>', 1, 0, NULL),
    C("s8.1-final-mib-8k", "003", "8.1 capacity: 8K request 1188 MiB", CALC, CAP8K, NULL, "final_mib", 1, "MiB", '=', 1188, 1e-9, NULL),
    C("s8.1-admit-8k", "003", "8.1/exercise 8-1: 12 GiB admits 10 long requests", CALC, CAP8K, NULL, "admitted_final", 1, "requests", '=', 10, 0, NULL),
    C("s8.1-input-gib-each", "003", "8.1 each independent long request adds 1.125 GiB", CALC, CAP8K, NULL, "input_gib_each", 1, "GiB", '=', 1.125, 1e-12, NULL),
    C("s8.1-input-gib-16", "003", "8.1 16 requests' inputs alone need 18 GiB", CALC, CAP8K, NULL, "input_gib_all", 1, "GiB", '=', 18, 1e-12, NULL),
    C("s8.3-shared-prefix-mib", "003", "8.3 the 6144-token prefix: 864 MiB once", CALC, CAP8K, NULL, "shared_mib", 1, "MiB", '=', 864, 1e-9, NULL),
    C("s8.3-private-tokens", "003", "8.3 private 8192 - 6144 + 255 tokens", CALC, CAP8K, NULL, "private_tokens", 1, "tokens", '=', 2303, 0, NULL),
    C("s8.3-private-mib", "003", "8.3 private part 324 MiB", CALC, CAP8K, NULL, "private_mib", 1, "MiB", '=', 324, 1e-9, NULL),
    C("s8.3-admit-shared", "003", "8.3 shared prefix: 10 -> 35 requests", CALC, CAP8K, NULL, "admitted_shared", 1, "requests", '=', 35, 0, "the prefix cache admitting token-id prompts"),
    C("s8.3-admit-shared-engine", "003", "8.3 shared prefix through the engine: 35 run at once", RUN, "ch8_shared_prefix_engine.json", NULL, "summary.peak_running", 1, "requests", '=', 35, 0, "the prefix is computed once (first request), the other 39 arrive after its prefill"),
    C("s8.2-dw", "003", "8.2 figure 8-3: Dw = 15,136,811,008 B", CALC, READ, NULL, "weights_read_bytes", 1, "B", '=', 15136811008.0, 0, NULL),
    C("s8.1-weights-gib", "003", "8.1 the 15.3 GiB of weights all requests share", CALC, READ, NULL, "weights_gib", 1, "GiB", '=', 15.3, 0.05, "every parameter in BF16"),
    C("s8.2-lora-matrix-weights", "003", "8.2 multi-LoRA: 14.1 GiB of matrix weights", CALC, READ, NULL, "weights_read_gib", 1, "GiB", '=', 14.1, 0.05, "the weights a step reads: all but the input embedding table"),
    C("s8.2-d-2k-b1", "003", "8.2 figure 8-3: d(1, 2K) = 14.38 GiB", CALC, READ, NULL, "d_gib_L2048_b1", 1, "GiB", '=', 14.38, 0.005, NULL),
    C("s8.2-d-2k-b64", "003", "8.2 figure 8-3: d(64, 2K) = 0.50 GiB", CALC, READ, NULL, "d_gib_L2048_b64", 1, "GiB", '=', 0.50, 0.005, NULL),
    C("s8.2-d-2k-ratio", "003", "8.2 figure 8-3: about 1/29 from batch 1 to 64", CALC, READ, NULL, "d_gib_L2048_b1 / d_gib_L2048_b64", 1, "x", '=', 29, 0.5, NULL),
    C("ex8.1-bkv-2k", "003", "exercise 8-1: bKV = 51 at 2K", CALC, READ, NULL, "bkv_L2048", 1, "", '=', 51, 0, NULL),
    C("ex8.1-bkv-8k", "003", "exercise 8-1: bKV = 13 at 8K", CALC, READ, NULL, "bkv_L8192", 1, "", '=', 13, 0, NULL),
    C("ex8.1-capacity-first-2k", "003", "exercise 8-1: capacity (37) binds before bKV (51)", CALC, CAP2K, NULL, "admitted_final", 1, "requests", '<', 51, 0, "the book's bKV (51) is the bound: 37 admitted, so the capacity limit comes first"),
    C("s8.2-resident-64x2k", "003", "8.2 64 x 2K: weights + KV after one decode step", CALC, READ, NULL, "resident_gb", 1, "GB", '=', 35.7, 0.05, "all weights (embedding table too) + 64 x 2049 tokens of KV"),
    CR("s8.2-step-decode-2k", "003", "8.2 step model: 2K decode 26.26 ms", CALC, STEP, NULL, "decode_2k.ms", 1, "ms", '=', 26.26, 0.005, "experiment 8-1 measured 26.26 ms; the fitted step model reproduces it", "decode_2k.roofline_ms"),
    CR("s8.2-step-prefill-2k", "003", "8.2 step model: 2K prefill 94.8 ms", CALC, STEP, NULL, "prefill_2k.ms", 1, "ms", '=', 94.8, 0.05, NULL, "prefill_2k.roofline_ms"),
    C("ex8.2-pairs-512-0", "003", "exercise 8-2: pairs(512, 0)", CALC, STEP, NULL, "chunk_512_h0.pairs", 1, "pairs", '=', 131328, 0, NULL),
    C("ex8.2-pairs-512-7680", "003", "exercise 8-2: pairs(512, 7680)", CALC, STEP, NULL, "chunk_512_h7680.pairs", 1, "pairs", '=', 4063488, 0, NULL),
    C("s8.2-chunk-growth", "003", "8.2 figures 8-8/8-9: same-size chunks get slower, +39%", CALC, STEP, NULL, "chunk_512_h7680.ms / chunk_512_h0.ms", 1, "x", '=', 1.39, 0.12,
      "chapter inconsistency: its medians 25.3 -> 35.1 ms lie below its own 26.22 ms fixed cost; its step model gives 42.18 -> 53.98 ms (+28%); tolerance 0.12 covers both"),
    C("s8.2-chunk-flops-growth", "003", "8.2 the last chunk's matrix work about 32% above the first", CALC, FLOPS, NULL, "chunk_512_h7680.tflop / chunk_512_h0.tflop", 1, "x", '=', 1.32, 0.03, "projections and FFN equal; attention pairs grow"),
    C("s8.2-weights-read-8.4ms", "003", "8.2 reading the weights at peak bandwidth: about 8.4 ms", CALC, READ, NULL, "weights_read_ms_at_peak_bw", 1, "ms", '=', 8.4, 0.05, "Dw / 1792 GB/s"),
    C("s8.6-decode-read-2k", "003", "8.6 experiment 8-1 table: a 2K decode reads 15.44 GB", CALC, FLOPS, NULL, "decode_1x2k.read_gb", 1, "GB", '=', 15.44, 0.005, NULL),
    C("s8.6-decode-bound-2k", "003", "8.6 ... its read bound 8.62 ms", CALC, FLOPS, NULL, "decode_1x2k.read_ms_at_peak_bw", 1, "ms", '=', 8.62, 0.005, NULL),
    C("s8.6-decode-overhead", "003", "8.6 ... 26.26 ms is about 17.6 ms above the bound", CALC, STEP, NULL, "decode_2k.over_bound_ms", 1, "ms", '=', 17.6, 0.05, "the step model's 26.26 ms minus the read bound (weights + 2049 tokens of KV at 1792 GB/s)"),
    C("s8.1-single-throughput", "003", "8.1 one request alone: about 38 tok/s", CALC, STEP, NULL, "1000 / decode_2k.ms", 1, "tok/s", '=', 38, 0.1, NULL),
    CR("s8.1-16x2k-round", "003", "8.1 16 x 2K: a decode round 27.44 ms (measured)", CALC, STEP, NULL, "decode_16x2k.ms", 1, "ms", '=', 27.44, 0.7,
      "rests on experiment 8-1's measurement; the chapter's own step model gives 26.80 ms (2.3% low), tolerance 0.7 ms", "decode_16x2k.roofline_ms"),
    CB("s8.1-request-time", "003", "8.1 figure 8-2: one 2K request, 0.096 + 255 x 0.0265 s", RUN, "ch8_single_2k.json", NULL, "requests[r0].e2e_s", 1, "s", '=', 6.85, 0.1,
       "the figure's 6.95 s includes 0.1 s of queueing; it uses the measured 26.5 ms mean gap where the step model gives 26.26-26.27 ms: tolerance 0.1 s"),
    C("s8.1-itl-sum", "003", "8.1 255 gaps total 6.76 s", RUN, "ch8_single_2k.json", NULL, "requests[r0].e2e_s - requests[r0].ttft_s", 1, "s", '=', 6.76, 0.07, "measured 26.5 ms mean gap vs the step model's 26.26 ms"),
    C("s8.1-inserted-prefill", "003", "8.1 figure 8-2: another request's prefill midway adds about 0.1 s (6.95 -> 7.05 s)", RUN, "ch8_inserted_prefill.json", NULL, "requests[b].e2e_s - requests[a].e2e_s", 1, "s", '=', 0.1, 0.035,
      "the book adds the measured 0.096 s prefill; in the step model the inserted 2K prefill costs 30.4 us x 2048 + 3 ns x 2,098,176 pairs = 68.6 ms on top of b's decode: tolerance 0.035 s"),
    C("s8.1-ttft-prefill", "003", "8.1 figure 8-2: prefill and first token about 0.096 s", RUN, "ch8_single_2k.json", NULL, "requests[r0].ttft_s", 1, "s", '=', 0.096, 0.002, "measured 96 ms; the step model 94.77 ms"),
    CB("s8.2-four-continuous-gap", "003", "8.2 figures 8-5..8-7: continuous batching stretches r0's gap more than tenfold", RUN, FOURC, NULL,
       "(requests[r0].token_times_s[2] - requests[r0].token_times_s[1]) / (requests[r0].token_times_s[1] - requests[r0].token_times_s[0])", 1, "x", '>', 10, 0, NULL),
    C("ex8.2-first-prefill", "003", "exercise 8-2: r0 + r1's joint prefill", RUN, FOURC, NULL, "requests[r0].token_times_s[0]", 1e3, "ms", '=', 163.33, 0.005,
      "the chapter asks; 26.22 + 30.4e-3 x 4096 + 3e-6 x 4,196,352 by hand"),
    C("ex8.2-next-decode", "003", "exercise 8-2: the next decode step of r0 and r1", RUN, FOURC, NULL, "requests[r0].token_times_s[1] - requests[r0].token_times_s[0]", 1e3, "ms", '=', 26.29, 0.005,
      "26.22 + 30.4e-3 x 2 + 3e-6 x 2 x 2049 by hand"),
    C("ex8.2-r2-iteration", "003", "exercise 8-2: the iteration that admits r2", RUN, FOURC, NULL, "requests[r0].token_times_s[2] - requests[r0].token_times_s[1]", 1e3, "ms", '=', 375.97, 0.005,
      "r0's decode + r2's 8192-token prefill: 26.22 + 30.4e-3 x 8193 + 3e-6 x 33,560,578 by hand"),
    C("ex8.2-chunked-gap", "003", "exercise 8-2: chunks of 512 keep r0's longest gap under 50 ms", RUN, FOURK, NULL, "requests[r0].itl_max_s", 1e3, "ms", '<', 50, 0, NULL),
    C("s8.2-static-waits", "003", "8.2 static batching: r2 starts only after the whole batch ends", RUN, FOURS, NULL, "requests[r2].token_times_s[0] - requests[r0].token_times_s[7]", 1e3, "ms", '>', 0, 0, NULL),
    C("s8.2-graph-17", "003", "8.2 CUDA graphs 16, 32: 17 rows run the 32-row graph", CALC, "ch8_cuda_graphs.json", NULL, "padded_17", 1, "rows", '=', 32, 0, NULL),
    C("s8.2-graph-18", "003", "8.2 ... 18 -> 17 still runs 32 rows", CALC, "ch8_cuda_graphs.json", NULL, "padded_18", 1, "rows", '=', 32, 0, NULL),
    C("s8.2-graph-16", "003", "8.2 ... 17 -> 16 switches to the small graph", CALC, "ch8_cuda_graphs.json", NULL, "padded_16", 1, "rows", '=', 16, 0, NULL),
    C("s8.2-graph-17-padding", "003", "8.2 ... a 17-row graph would save 15 padded rows", CALC, "ch8_cuda_graphs.json", NULL, "padding_17", 1, "rows", '=', 15, 0, NULL),
    C("s8.3-paged-max", "003", "8.3 figures 8-11..8-13: reserve max 64 slots (p = 4)", CALC, "ch8_paged_blocks.json", NULL, "p4.reserve_max_slots", 1, "slots", '=', 64, 0, NULL),
    C("s8.3-paged", "003", "8.3 ... paged 52", CALC, "ch8_paged_blocks.json", NULL, "p4.paged_slots", 1, "slots", '=', 52, 0, NULL),
    C("s8.3-paged-shared", "003", "8.3 ... with sharing 44", CALC, "ch8_paged_blocks.json", NULL, "p4.shared_slots", 1, "slots", '=', 44, 0, NULL),
    C("s8.3-paged-stored", "003", "8.3 ... 42 tokens stored", CALC, "ch8_paged_blocks.json", NULL, "p4.stored_tokens", 1, "tokens", '=', 42, 0, NULL),
    C("s8.3-paged-waste-bound", "003", "8.3 figure 8-10: waste <= p - 1 per sequence", CALC, "ch8_paged_blocks.json", NULL, "p4.max_waste", 1, "slots", '<', 3, 0, NULL),
    C("ex8.3-p16-no-sharing", "003", "exercise 8-3: p = 16, 8 common tokens fill no block", CALC, "ch8_paged_blocks.json", NULL, "p16.second_hit_tokens", 1, "tokens", '=', 0, 0, NULL),
    C("s8.3-cow-copies", "003", "8.3 figure 8-15: the shared tail block (a, b, c) is copied once", RUN, "ch8_copy_on_write.json", NULL, "summary.prefix_cache.cow_copies", 1, "copies", '=', 1, 0, "the last holder writes in place"),
    C("s8.3-cow-blocks", "003", "8.3 figure 8-15: the full block stays shared: 1 + 2 tails", RUN, "ch8_copy_on_write.json", NULL, "summary.kv.peak_used_blocks", 1, "blocks", '=', 3, 0, NULL),
    C("s8.3-branch-references", "003", "8.3 four branches: 4 x (95 + 9) references", CALC, "ch8_branches.json", NULL, "references", 1, "", '=', 416, 0, NULL),
    C("s8.3-branch-physical", "003", "8.3 ... 95 + 4 x 9 physical blocks", CALC, "ch8_branches.json", NULL, "physical_blocks", 1, "blocks", '=', 131, 0, NULL),
    C("s8.3-branch-saving", "003", "8.3 ... about 69% fewer", CALC, "ch8_branches.json", NULL, "saving", 100, "%", '=', 69, 0.5, NULL),
    C("s8.3-recompute-A", "003", "8.3 figure 8-22: recomputing the 6144-token prefix at 62% of peak", CALC, FLOPS, NULL, "recompute_6144.ms", 1, "ms", '=', 307.9, 1.5, "servesim's FLOP count (every matmul and norm, causal attention pairs, no LM head) is 0.3% above the chapter's: tolerance 0.5%"),
    C("s8.3-recompute-B", "003", "8.3 figure 8-22: recomputing a 2048-token prefix", CALC, FLOPS, NULL, "recompute_2048.ms", 1, "ms", '=', 94.7, 0.5, "as for A: servesim's count is 0.36% above the chapter's; tolerance 0.5%"),
    C("s8.3-recompute-ratio", "003", "8.3 recompute grows superlinearly: 3.25x for 3x the tokens", CALC, FLOPS, NULL, "recompute_6144.ms / recompute_2048.ms", 1, "x", '=', 3.25, 0.01, NULL),
    C("s8.4-q8-bytes", "003", "8.4 figure 8-23: q8_0 = 32 + 2 B per 32 values", CALC, "ch8_kv_formats.json", NULL, "q8_0.bytes_per_32", 1, "B", '=', 34, 0, NULL),
    C("s8.4-q4-bytes", "003", "8.4 figure 8-23: q4_0 = 16 + 2 B", CALC, "ch8_kv_formats.json", NULL, "q4_0.bytes_per_32", 1, "B", '=', 18, 0, NULL),
    C("s8.4-bf16-bytes", "003", "8.4 figure 8-23: BF16 64 B", CALC, "ch8_kv_formats.json", NULL, "bf16.bytes_per_32", 1, "B", '=', 64, 0, NULL),
    C("s8.4-q8-bits", "003", "8.4 figure 8-23: q8_0 8.5 bit/value", CALC, "ch8_kv_formats.json", NULL, "q8_0.bits_per_value", 1, "bit", '=', 8.5, 1e-12, NULL),
    C("s8.4-q4-bits", "003", "8.4 figure 8-23: q4_0 4.5 bit/value", CALC, "ch8_kv_formats.json", NULL, "q4_0.bits_per_value", 1, "bit", '=', 4.5, 1e-12, NULL),
    C("s8.4-8k-input-bf16", "003", "8.4 an 8K input: BF16 1152 MiB", CALC, "ch8_kv_formats.json", NULL, "bf16.input_8k_mib", 1, "MiB", '=', 1152, 1e-9, NULL),
    C("s8.4-8k-input-q8", "003", "8.4 ... q8_0 612 MiB", CALC, "ch8_kv_formats.json", NULL, "q8_0.input_8k_mib", 1, "MiB", '=', 612, 1e-9, NULL),
    C("s8.4-8k-input-q4", "003", "8.4 ... q4_0 324 MiB", CALC, "ch8_kv_formats.json", NULL, "q4_0.input_8k_mib", 1, "MiB", '=', 324, 1e-9, NULL),
    C("s8.4-full-q8", "003", "8.4 a finished 8K request: 1188 -> 631.125 MiB in q8_0", CALC, "ch8_kv_formats.json", NULL, "q8_0.full_8k_mib", 1, "MiB", '=', 631.125, 1e-9, NULL),
    C("s8.4-16-q8", "003", "8.4 ... 16 of them about 9.86 GiB, within 12 GiB", CALC, "ch8_kv_formats.json", NULL, "q8_0.full_8k_gib_all", 1, "GiB", '=', 9.86, 0.005, NULL),
    C("s8.4-q8-saves-540", "003", "8.4 BF16 -> q8_0 reads 540 MiB less for an 8K context", CALC, "ch8_kv_formats.json", NULL, "bf16.input_8k_mib - q8_0.input_8k_mib", 1, "MiB", '=', 540, 1e-9, NULL),
    C("s8.1-lora-kv-100", "003", "8.2 multi-LoRA: 100 unshared 8K contexts need 112.5 GiB of KV", CALC, "ch8_lora_kv.json", NULL, "bf16.input_8k_gib_all", 1, "GiB", '=', 112.5, 1e-9, NULL),
    C("s8.6-prefill-16x8k", "003", "8.6 board A: prefill of 16 x 8192 tokens, 2,137.5 TFLOP", CALC, FLOPS, NULL, "prefill_16x8k.tflop", 1, "TFLOP", '=', 2137.5, 0.05, "LM head only on each prompt's last position"),
    C("s8.6-prefill-16x8k-time", "003", "8.6 board A: at 58% of 503.8 TFLOP/s about 7.34 s", CALC, FLOPS, NULL, "prefill_16x8k.s", 1, "s", '=', 7.34, 0.03, "chapter inconsistency: its own 2137.5 TFLOP / (0.58 x 503.8 TFLOP/s) is 7.315 s, printed as 7.34 (and 7.3 elsewhere); tolerance 0.03 s"),
    CR("s8.6-round-16x8k-ms", "003", "8.6 experiment 8-1 table: a 16 x 8K round 29.63 ms (measured)", CALC, STEP, NULL, "decode_16x8k.ms", 1, "ms", '=', 29.63, 2.6,
       "rests on experiment 8-1's measurement (34.46 GB read); the chapter's step model, fitted at 2K, gives 27.1 ms (8.5% low): tolerance 2.6 ms", "decode_16x8k.roofline_ms"),
    C("s8.6-round-bf16", "003", "8.6 board A: a decode round of 16 x 8K reads 34.46 GB", CALC, FLOPS, NULL, "decode_16x8k_bf16.read_gb", 1, "GB", '=', 34.46, 0.005, NULL),
    C("s8.6-round-q8", "003", "8.6 board C: 25.40 GB with q8_0 KV", CALC, FLOPS, NULL, "decode_16x8k_q8.read_gb", 1, "GB", '=', 25.40, 0.005, NULL),
    C("s8.6-board-D-verify", "003", "8.6 board D: 16 x 8 verified positions about 2.56 TFLOP", CALC, FLOPS, NULL, "verify_16x8.tflop", 1, "TFLOP", '=', 2.56, 0.02, NULL),
    C("s8.6-board-D-verify-ms", "003", "8.6 board D: ... about 8.8 ms, shorter than 27.35 ms", CALC, FLOPS, NULL, "verify_16x8.ms", 1, "ms", '=', 8.8, 0.1, "at 58% of peak"),
    C("s8.5-verify-extra-rows", "003", "8.5 verifying 5 positions: 4 extra rows about 65 GFLOP", CALC, FLOPS, NULL, "extra_4_rows.gflop", 1, "GFLOP", '=', 65, 1.5, NULL),
    C("s8.5-verify-extra-ms", "003", "8.5 ... about 0.2 ms at 62% of peak", CALC, FLOPS, NULL, "extra_4_rows.ms", 1, "ms", '=', 0.2, 0.02, NULL),
    C("s8.6-board-A-fits", "003", "8.6 board A: independent BF16 does not fit 12 GiB", CALC, BOARD, NULL, "A.fits", 1, "", '=', 0, 0, NULL),
    C("s8.6-board-B-fits", "003", "8.6 board B: the shared prefix fits", CALC, BOARD, NULL, "B.fits", 1, "", '=', 1, 0, NULL),
    C("s8.6-board-B-time", "003", "8.6 board B: 2.04 s + 255 x 27.35 ms = 9.01 s", CALC, BOARD, NULL, "B.time_s", 1, "s", '=', 9.01, 0.01, "rests on experiment 8-1's measured prefill and round (the ch8-experiment-8-1 profile)"),
    CB("s8.6-board-B-engine", "003", "8.6 board B through the engine and the step model: about 9.01 s", RUN, "ch8_board_b_engine.json", NULL, "summary.e2e_s.max", 1, "s", '=', 9.01, 0.4,
       "the book's 9.01 s rests on experiment 8-1's measured 2.04 s prefill and 27.35 ms rounds; the chapter's step model gives a 1.73 s prefill (16 x 2048 new tokens over 6144 cached) and 27.1 ms rounds: tolerance 0.4 s"),
    C("s8.6-board-B-engine-late", "003", "8.6 board B through the engine: fits but misses the 7 s deadline", RUN, "ch8_board_b_engine.json", NULL, "summary.e2e_s.max", 1, "s", '>', 7, 0, NULL),
    CB("ex8.9-board-E-engine", "003", "exercise 8-9 board E through the engine: lookup drafts meet 7 s", RUN, "ch8_board_e_engine.json", NULL, "summary.e2e_s.max", 1, "s", '<', 7, 0, NULL),
    C("s8.6-board-C-late", "003", "8.6 board C: q8_0 fits but is slower", CALC, BOARD, NULL, "C.time_s", 1, "s", '>', 7, 0, NULL),
    C("s8.6-board-D-time", "003", "8.6 board D: shared + draft model about 4.56 s", CALC, BOARD, NULL, "D.time_s", 1, "s", '=', 4.56, 0.01, NULL),
    C("s8.6-board-D-fits", "003", "8.6 board D: 3188 MiB more still fits", CALC, BOARD, NULL, "D.fits", 1, "", '=', 1, 0, NULL),
    C("s8.6-board-one-option", "003", "8.6 only one combination passes", CALC, BOARD, NULL, "feasible_options", 1, "", '=', 1, 0, NULL),
    C("ex8.9-board-E", "003", "exercise 8-9 board E: lookup drafts, 2 per round, 27.45 ms", CALC, "ch8_design_board_e.json", NULL, "E.time_s", 1, "s", '<', 7, 0, NULL),
    C("ex8.9-board-E-fits", "003", "exercise 8-9 board E: no extra memory", CALC, "ch8_design_board_e.json", NULL, "E.fits", 1, "", '=', 1, 0, NULL),
    C("s8.6-board-16-B", "003", "8.6 pitfalls: 16-token outputs, B 2.45 s", CALC, "ch8_design_board_16.json", NULL, "B.time_s", 1, "s", '=', 2.45, 0.005, NULL),
    C("s8.6-board-16-D", "003", "8.6 pitfalls: 16-token outputs, D 2.37 s", CALC, "ch8_design_board_16.json", NULL, "D.time_s", 1, "s", '=', 2.37, 0.005, NULL),
    C("s8.6-board-6gib", "003", "8.6 summary: with 6 GiB no option is feasible", CALC, "ch8_design_board_6gib.json", NULL, "feasible_options", 1, "", '=', 0, 0, NULL),
    C("s8.5-en-a025", "003", "8.5 E[N] for m = 4, a = 1/4", CALC, SPEC, NULL, "aaaa.expected_tokens", 1, "tokens", '=', 1.33, 0.005, NULL),
    C("s8.5-en-a075", "003", "8.5 E[N] for m = 4, a = 3/4", CALC, SPEC, NULL, "bbbb.expected_tokens", 1, "tokens", '=', 3.05, 0.005, NULL),
    C("s8.5-ms-a025", "003", "8.5 AAAA: about 19.8 ms per token", CALC, SPEC, NULL, "aaaa.ms_per_token", 1, "ms", '=', 19.8, 0.05, NULL),
    C("s8.5-ms-a075", "003", "8.5 BBBB: about 8.64 ms per token", CALC, SPEC, NULL, "bbbb.ms_per_token", 1, "ms", '=', 8.64, 0.005, NULL),
    C("s8.5-breakeven-a025", "003", "8.5 AAAA breaks even at about 8.7 ms of drafting", CALC, SPEC, NULL, "aaaa.breakeven_draft_ms", 1, "ms", '=', 8.7, 0.05, NULL),
    C("s8.5-breakeven-a075", "003", "8.5 BBBB breaks even at about 53.9 ms", CALC, SPEC, NULL, "bbbb.breakeven_draft_ms", 1, "ms", '=', 53.9, 0.1, NULL),
    C("s8.5-serial-drafts", "003", "8.5 serial drafts: 4 forwards, 14.28 ms", CALC, SPEC, NULL, "serial_3.draft_total_ms", 1, "ms", '=', 14.28, 0.005, NULL),
    C("s8.5-parallel-2", "003", "8.5 a parallel draft averaging 2: (3.57 + 26.26) / 2", CALC, SPEC, NULL, "parallel_2.ms_per_token", 1, "ms", '=', 14.9, 0.05, NULL),
    C("s8.5-parallel-beats-serial", "003", "8.5 both averaging 3: parallel is faster", CALC, SPEC, NULL, "parallel_3.ms_per_token - serial_3.ms_per_token", 1, "ms", '<', 0, 0, NULL),
    C("s8.5-parallel-2-slower", "003", "8.5 ... but parallel at 2 loses to serial at 3", CALC, SPEC, NULL, "parallel_2.ms_per_token - serial_3.ms_per_token", 1, "ms", '>', 0, 0, NULL),
    C("s8.5-index-saving", "003", "8.5 BBBB saves about 17.6 ms per token", CALC, SPEC, NULL, "index.saved_ms_per_token", 1, "ms", '=', 17.6, 0.05, NULL),
    C("s8.5-index-breakeven", "003", "8.5 about 114 tokens pay for a 2 s index", CALC, SPEC, NULL, "index.setup_breakeven_tokens", 1, "tokens", '=', 114, 1, NULL),
    C("s8.5-plain-256", "003", "8.5 256 tokens of plain decode about 6.72 s", CALC, SPEC, NULL, "index.plain_s", 1, "s", '=', 6.72, 0.005, NULL),
    C("s8.5-index-total", "003", "8.5 index + BBBB about 4.2 s", CALC, SPEC, NULL, "index.total_s", 1, "s", '=', 4.2, 0.02,
      "chapter inconsistency: its inputs give 2 + 256 x 8.64 ms = 4.21 s, and it mentions 4.22 elsewhere; tolerance 0.02 s"),
    C("ex8.7-en-m1", "003", "exercise 8-7: a = 3/4, E[N] at m = 1", CALC, "ch8_exercise_8_7.json", NULL, "m1.expected_tokens", 1, "tokens", '=', 1.75, 1e-9, "the chapter gives the formula; 1 + 3/4"),
    C("ex8.7-en-m2", "003", "exercise 8-7: E[N] at m = 2", CALC, "ch8_exercise_8_7.json", NULL, "m2.expected_tokens", 1, "tokens", '=', 2.3125, 1e-9, NULL),
    C("ex8.7-en-m8", "003", "exercise 8-7: E[N] at m = 8", CALC, "ch8_exercise_8_7.json", NULL, "m8.expected_tokens", 1, "tokens", '=', 3.6997, 0.0001, NULL),
    C("ex8.7-m5-no-gain", "003", "exercise 8-7: one draft more than 4 does not pay (dT/dN > T/N)", CALC, "ch8_exercise_8_7.json", NULL, "m5.ms_per_token - m4.ms_per_token", 1, "ms", '>', 0, 0, "the exercise's marginal condition; derived, the chapter prints no answer"),
    C("ex8.7-m3-no-gain", "003", "exercise 8-7: one draft fewer than 4 costs more per token", CALC, "ch8_exercise_8_7.json", NULL, "m3.ms_per_token - m4.ms_per_token", 1, "ms", '>', 0, 0, NULL),
    C("ex8.7-m4-beats-m8", "003", "exercise 8-7: longer drafts pay less (m = 4 beats m = 8)", CALC, "ch8_exercise_8_7.json", NULL, "m4.ms_per_token - m8.ms_per_token", 1, "ms", '<', 0, 0, NULL),
    C("ex8.7-grouped-m5", "003", "exercise 8-7: grouped by 4, m = 5 loses to m = 4", CALC, "ch8_exercise_8_7.json", NULL, "g5.ms_per_token - g4.ms_per_token", 1, "ms", '>', 0, 0, NULL),
    C("s8.5-greedy-mismatch", "003", "8.5 figure 8-29: the 3rd draft is wrong, 2 accepted", CALC, "ch8_greedy_mismatch.json", NULL, "accepted", 1, "tokens", '=', 2, 0, NULL),
    C("s8.5-greedy-all", "003", "8.5 figure 8-29: all match, one more token after them", CALC, "ch8_greedy_all.json", NULL, "emitted", 1, "tokens", '=', 5, 0, NULL),
    C("s8.5-draft-A-rate", "003", "8.5 figures 8-30/8-31: drafting always A accepts 1/4", CALC, "ch8_spec_always_a.json", NULL, "accepted_mass[0] + accepted_mass[1]", 1, "", '=', 0.25, 1e-12, NULL),
    C("s8.5-draft-B-rate", "003", "8.5 figures 8-30/8-31: always B accepts 3/4", CALC, "ch8_spec_always_b.json", NULL, "accepted_mass[0] + accepted_mass[1]", 1, "", '=', 0.75, 1e-12, NULL),
    C("s8.5-draft-A-output", "003", "8.5 ... and the output still follows p (A 1/4)", CALC, "ch8_spec_always_a.json", NULL, "final[0]", 1, "", '=', 0.25, 0.005, NULL),
    C("s8.6-goodput-good", "003", "8.6 goodput: of 336 answers only 155 correct and on time", RPL, "ch8_goodput_retrieval.json", NULL, "summary.goodput.good_requests", 1, "requests", '=', 155, 0, "the counts are the chapter's; the timings are invented to realise them"),
    C("s8.6-goodput-correct", "003", "8.6 goodput: 294 correct answers", RPL, "ch8_goodput_retrieval.json", NULL, "summary.goodput.attainment.correct * summary.requests", 1, "requests", '=', 294, 0.01, NULL),
    C("s8.6-goodput-late", "003", "8.6 goodput: 139 correct answers void for being late", RPL, "ch8_goodput_retrieval.json", NULL, "summary.goodput.attainment.correct * summary.requests - summary.goodput.good_requests", 1, "requests", '=', 139, 0.01, NULL),
    C("s8.6-rate-1-goodput", "003", "8.6 figures 8-33/8-34: at 1 req/s goodput about 0.90", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r1.goodput_rps", 1, "req/s", '=', 0.90, 0.2, GVR),
    C("s8.6-rate-4-completion", "003", "8.6 figures 8-33/8-34: at 4 req/s completion 2.33", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r4.completion_rps", 1, "req/s", '=', 2.33, 0.2, GVR),
    C("s8.6-rate-4-goodput", "003", "8.6 figures 8-33/8-34: at 4 req/s goodput 1.02", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r4.goodput_rps", 1, "req/s", '=', 1.02, 0.3, GVR),
    C("s8.6-rate-16-completion", "003", "8.6 figures 8-33/8-34: at 16 req/s completion only 2.38", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r16.completion_rps", 1, "req/s", '=', 2.38, 0.2, GVR),
    C("s8.6-rate-16-goodput", "003", "8.6 figures 8-33/8-34: at 16 req/s goodput 0.60", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r16.goodput_rps", 1, "req/s", '=', 0.60, 0.1, GVR),
    C("s8.6-rate-completion-rises", "003", "8.6 completion throughput rises from 4 to 16 req/s ...", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r16.completion_rps - r4.completion_rps", 1, "req/s", '>', 0, 0, NULL),
    C("s8.6-rate-goodput-falls", "003", "8.6 ... while goodput falls past the knee (-41%)", SWP, "ch8_goodput_vs_rate.json", "1,4,16/3", "r16.goodput_rps / r4.goodput_rps - 1", 100, "%", '<', -20, 0, "the chapter's -41%; servesim's own drop is shown, the claim checked is that it falls"),
    C("s8.6-little-05", "003", "8.6 Little's law: 4 req/s x 0.5 s = 2 in the system", RUN, "ch8_littles_law_05.json", NULL, "summary.mean_running", 1, "requests", '=', 2, 0.01, "time-weighted mean over the drain window (edges included: 4000 requests)"),
    C("s8.6-little-2", "003", "8.6 Little's law: 2 s in the system -> 8", RUN, "ch8_littles_law_2.json", NULL, "summary.mean_running", 1, "requests", '=', 8, 0.02, NULL),

    /* ------------------------ issues 17 and 18 (their features; pending: inputs the chapter does not give) */
    C("s8.2-lora-adapter-mib", "003", "8.2 multi-LoRA: one rank-16 Q/V adapter 14.6 MiB", CALC, "ch8_lora.json", NULL, "adapter_mib", 1, "MiB", '=', 14.6, 0.05, "36 x 16 x (8192 + 5120) x 2 B = 14.625 MiB (issue 18's lora.h)"),
    C("s8.2-lora-100-adapters", "003", "8.2 multi-LoRA: 100 adapters 1.43 GiB", CALC, "ch8_lora.json", NULL, "all_gib", 1, "GiB", '=', 1.43, 0.005, NULL),
    C("s8.3-cancel-release", "003", "8.3 figure 8-16: 104 blocks released about 31 ms after cancel", RUN, "ch8_cancel_release.json", NULL, "requests[x].kv_released_s - requests[x].cancel_after_s", 1000, "ms", '=', 31, 3.5,
      "not fitted: the blocks come back one step after the call's 1.6 ms, 1.6 + step(1, 1648) = 27.86 ms with the chapter's step model; the chapter's ~31 ms was measured on a real engine whose in-flight step took ~29.4 ms (its model says 26.26 ms), so +-3.5 ms covers that measured step, not a tuned input"),
    C("s8.3-cancel-blocks", "003", "8.3 figure 8-16: the cancelled request's 104 blocks", RUN, "ch8_cancel_release.json", NULL, "requests[x].cancel_blocks", 1, "blocks", '=', 104, 0, "ceil((1648 + 1) / 16) while it decodes its second token"),
    C("s8.3-cancel-return", "003", "8.3 figure 8-16: the cancel call returns after about 1.6 ms", RUN, "ch8_cancel_release.json", NULL, "requests[x].cancel_return_s - requests[x].cancel_after_s", 1000, "ms", '=', 1.6, 1e-5, "the input file puts the call 1.6 ms before the step boundary, as the chapter observed"),
    P("s8.3-preempt-1gib", "003", "8.3 a 1 GiB pool: one preemption, 1805 more tokens", 1805, "tokens", NOPREEMPT, "preemption and recompute"),
    P("s8.3-agent-hits-6gib", "003", "8.3 12-round agent replay: 6 GiB hits 16,304 tokens", 16304, "tokens", NOREPLAY, "agents replay"),
    P("s8.3-agent-reprocess-6gib", "003", "8.3 ... reprocesses 3252", 3252, "tokens", NOREPLAY, "agents replay"),
    C("s8.3-value-per-mib-A", "003", "8.3 figure 8-22: A's value about 0.154 ms per MiB", CALC, "ch8_cache_value.json", NULL, "A.value_ms_per_mib", 1, "ms/MiB", '=', 0.154, 0.001, "V = p (T_recompute - T_fetch) - T_maintain (issue 18's offload_cache_value)"),
    C("s8.3-value-per-mib-B", "003", "8.3 figure 8-22: B's about 0.140 ms per MiB", CALC, "ch8_cache_value.json", NULL, "B.value_ms_per_mib", 1, "ms/MiB", '=', 0.140, 0.001, NULL),
    C("s8.4-q8-saves-ms", "003", "8.4 q8_0 saves about 0.487 ms per read at 1.16 TB/s", CALC, FLOPS, NULL, "decode_8k_bf16.read_ms_at_effective_bw - decode_8k_q8.read_ms_at_effective_bw", 1, "ms", '=', 0.487, 0.002, "540 MiB less at the measured effective bandwidth"),
    C("s8.4-q8-conversion-slower", "003", "8.4 with Tc = 0.8 ms about 0.313 ms slower", CALC, FLOPS, NULL, "decode_8k_q8_tc.read_plus_conversion_ms_at_effective_bw - decode_8k_bf16.read_ms_at_effective_bw", 1, "ms", '=', 0.313, 0.002, "the engine's cost wrapper adds 8192 x 97.65625 ns = 0.8 ms of conversion to the 0.487 ms saved"),
    C("s8.4-offload-freed", "003", "8.4 offloading 9 FFN layers frees 2592 MiB", CALC, "ch8_offload.json", NULL, "buffers_1.freed_mib", 1, "MiB", '=', 2592, 1e-9, "issue 18's offload_plan"),
    C("s8.4-offload-net-1", "003", "8.4 ... one prefetch buffer: net 2304 MiB", CALC, "ch8_offload.json", NULL, "buffers_1.net_mib", 1, "MiB", '=', 2304, 1e-9, NULL),
    C("s8.4-offload-net-2", "003", "8.4 ... two buffers: net 2016 MiB", CALC, "ch8_offload.json", NULL, "buffers_2.net_mib", 1, "MiB", '=', 2016, 1e-9, NULL),
    C("ex8.5-offload-more-inputs-1", "003", "8.4/exercise 8-5: one buffer fits 2 more 1152 MiB inputs", CALC, "ch8_offload.json", NULL, "buffers_1.more_states_1152", 1, "states", '=', 2, 0, NULL),
    C("ex8.5-offload-more-inputs-2", "003", "8.4/exercise 8-5: two buffers fit 1 more", CALC, "ch8_offload.json", NULL, "buffers_2.more_states_1152", 1, "states", '=', 1, 0, NULL),
    C("ex8.5-offload-more-full", "003", "8.4/exercise 8-5: only 1 more finished 1188 MiB request either way", CALC, "ch8_offload.json", NULL, "buffers_1.more_states_1188 + buffers_2.more_states_1188", 1, "states", '=', 2, 0, "1 with one buffer + 1 with two"),
    C("s8.4-offload-copy-gb", "003", "8.4 each round copies >= 2.72 GB", CALC, "ch8_offload.json", NULL, "buffers_1.copy_gb", 1, "GB", '=', 2.72, 0.005, NULL),
    C("s8.4-offload-copy", "003", "8.4 each round copies >= 2.72 GB / 64 GB/s = 42.5 ms", CALC, "ch8_offload.json", NULL, "pcie_gen5_x16.copy_ms", 1, "ms", '=', 42.5, 0.05, NULL),
    C("s8.4-offload-255", "003", "8.4 255 rounds of copying about 10.8 s", CALC, "ch8_offload.json", NULL, "pcie_gen5_x16.steps_s", 1, "s", '=', 10.8, 0.05, NULL),
    C("s8.4-offload-c2c", "003", "8.4 over NVLink-C2C 6.0 ms", CALC, "ch8_offload.json", NULL, "nvlink_c2c.copy_ms", 1, "ms", '=', 6.0, 0.05, NULL),
    C("s8.4-q2k-bytes", "003", "8.4 Q2_K 84 B per 256 values", CALC, "ch8_q2k_format.json", NULL, "q2_k.bytes_per_256", 1, "B", '=', 84, 0, "issue 17's DTYPE_Q2_K"),
    C("s8.4-q2k-bits", "003", "8.4 Q2_K 84 B per 256 values, 2.625 bit", CALC, "ch8_q2k_format.json", NULL, "q2_k.bits_per_value", 1, "bit", '=', 2.625, 1e-12, NULL),
    C("s8.4-mla-8k", "003", "8.4 the MLA state of an 8K context 549 MiB", CALC, "ch8_mla_8k.json", NULL, "bf16.context_8k_mib", 1, "MiB", '=', 549, 1e-9, "8192 x 61 layers x (512 + 64) x 2 B (issue 17's MLA)"),
    P("s8.4-hybrid-v41", "003", "8.4 DeepSeek V4.1 8K state 9.531 MiB", 9.531, "MiB", NOV4, "hybrid attention"),
    P("s8.4-hybrid-v4", "003", "8.4 DeepSeek V4 30.521 MiB, about 3.20x", 3.20, "x", NOV4, "hybrid attention"),
    C("s8.3-kda-recompute", "003", "8.3 figure 8-19: from the 8192 snapshot, recompute 2560 tokens", CALC, "ch8_kda_snapshots.json", NULL, "every_4096.recompute", 1, "tokens", '=', 2560, 0, "prefix_snapshot_restore(10752, 4096) (issue 17)"),
    C("s8.3-kda-restore-from", "003", "8.3 figure 8-19: a match through 10,752 restores from the 8192 snapshot", CALC, "ch8_kda_snapshots.json", NULL, "every_4096.restore_from", 1, "tokens", '=', 8192, 0, NULL),
    C("s8.3-kda-snapshots-2", "003", "8.3 figure 8-19: an 8K prefix, every 4096: 2 snapshots, about 107 MiB", CALC, "ch8_kda_snapshots.json", NULL, "every_4096.snapshots_mib", 1, "MiB", '=', 107, 0.5, "2 x the chapter's rounded 53.6 MiB = 107.2"),
    C("s8.3-kda-snapshots-32", "003", "8.3 figure 8-19: 32 snapshots about 1714 MiB", CALC, "ch8_kda_snapshots.json", NULL, "every_256.snapshots_mib", 1, "MiB", '=', 1714, 2, "32 x the chapter's 53.6 MiB = 1715.2; the chapter's 1714 implies 53.5625 before rounding, so +-2 MiB is the rounding of its input"),
    C("s8.4-235b-q2k", "003", "8.4 Qwen3-235B-A22B Q2_K: 64.43 GiB + 15.37 GiB metadata", CALC, "ch8_qwen3_235b_q2k.json", NULL, "weights_gib", 1, "GiB", '=', 79.8, 0.01, "issue 17's models/qwen3-235b-a22b-q2_k.json"),
    C("s8.4-235b-q2k-codes", "003", "8.4 ... 64.43 GiB of codes and float data", CALC, "ch8_qwen3_235b_q2k.json", NULL, "codes_gib", 1, "GiB", '=', 64.43, 0.005, NULL),
    C("s8.4-235b-q2k-meta", "003", "8.4 ... 15.37 GiB of quantisation metadata", CALC, "ch8_qwen3_235b_q2k.json", NULL, "meta_gib", 1, "GiB", '=', 15.37, 0.005, NULL),
    C("ex8.8-halve-prefill", "003", "exercise 8-8: prefill 20 s of 100 halved -> 90 s", CALC, "ch8_amdahl_ex8_8.json", NULL, "prefill.halved_total_s", 1, "s", '=', 90, 1e-9, "issue 18's tasks_amdahl, as servesim amdahl"),
    C("ex8.8-halve-decode", "003", "exercise 8-8: decode 50 s halved -> 75 s", CALC, "ch8_amdahl_ex8_8.json", NULL, "decode.halved_total_s", 1, "s", '=', 75, 1e-9, NULL),
    C("ex8.8-halve-tool", "003", "exercise 8-8: tool calls 30 s halved -> 85 s", CALC, "ch8_amdahl_ex8_8.json", NULL, "tool.halved_total_s", 1, "s", '=', 85, 1e-9, NULL),
    C("ex8.8-decode-4x-drafts", "003", "exercise 8-8: decode 4x faster + 8 s of draft preparation -> 70.5 s", CALC, "ch8_amdahl_ex8_8.json", NULL, "new_total_s", 1, "s", '=', 70.5, 1e-9, NULL),
};

#define N_CASES (sizeof cases / sizeof cases[0])

/* ------------------------------------------------------------ evaluation */

typedef struct Doc {
    ReproKind kind;
    const char *file, *arg;
    cJSON *doc;
    char err[sizeof(((Err *)0)->msg)];
} Doc;

typedef struct Result {
    const ReproCase *c;
    char status[12];     /* PASS, FAIL, ERROR, pending */
    double computed;
    int has_computed;
    double roofline;
    int has_roofline;
    char source[1400];
    char msg[1400];
} Result;

static char chapters_dir[1024];

static const char *chapter_path(char *buf, size_t n, const char *file)
{
    snprintf(buf, n, "%s/%s", chapters_dir, file);
    return buf;
}

static Doc docs[128];
static int n_docs;

static void docs_free(void)
{
    for (int i = 0; i < n_docs; i++) cJSON_Delete(docs[i].doc);
    n_docs = 0;
}

static const Doc *doc_for(ReproKind kind, const char *file, const char *arg)
{
    for (int i = 0; i < n_docs; i++)
        if (docs[i].kind == kind && !strcmp(docs[i].file, file) &&
            (docs[i].arg == arg || (docs[i].arg && arg && !strcmp(docs[i].arg, arg))))
            return &docs[i];
    if (n_docs == (int)(sizeof docs / sizeof docs[0])) docs_free(); /* a cache: start over when full */
    Doc *d = &docs[n_docs++];
    *d = (Doc){kind, file, arg, NULL, ""};
    char path[1200];
    Err e = {0};
    d->doc = repro_compute(kind, chapter_path(path, sizeof path, file), arg, &e);
    if (!d->doc) snprintf(d->err, sizeof d->err, "%s", e.msg);
    return d;
}

static void evaluate(const ReproCase *c, Result *r)
{
    *r = (Result){.c = c};
    if (c->pending) {
        snprintf(r->status, sizeof r->status, "pending");
        snprintf(r->msg, sizeof r->msg, "needs %s", c->pending);
        return;
    }
    char path[1200];
    repro_file_source(chapter_path(path, sizeof path, c->file), r->source, sizeof r->source);
    const Doc *d = doc_for(c->kind, c->file, c->arg);
    Err e = {0};
    double v;
    if (!d->doc || repro_get(d->doc, c->expr, &v, &e) < 0) {
        snprintf(r->status, sizeof r->status, "ERROR");
        snprintf(r->msg, sizeof r->msg, "%s", d->doc ? e.msg : d->err);
        return;
    }
    r->computed = v * c->scale;
    r->has_computed = 1;
    int ok = c->cmp == '<' ? r->computed <= c->book : c->cmp == '>' ? r->computed >= c->book
                                                                    : fabs(r->computed - c->book) <= c->tol * (1 + 1e-12) + 1e-15;
    snprintf(r->status, sizeof r->status, "%s", ok && isfinite(r->computed) ? "PASS" : "FAIL");
    if (c->bexpr && repro_get(d->doc, c->bexpr, &v, &e) == 0) {
        r->roofline = v * c->scale;
        r->has_roofline = 1;
    }
    if (c->beside && c->kind == REPRO_RUN) {
        const Doc *rd = doc_for(c->kind, c->file, "roofline");
        if (rd->doc && repro_get(rd->doc, c->expr, &v, &e) == 0) {
            r->roofline = v * c->scale;
            r->has_roofline = 1;
        }
    }
}

static const char *command_of(const ReproCase *c, char *buf, size_t n)
{
    if (c->pending) return snprintf(buf, n, "(pending)"), buf;
    if (c->kind == REPRO_RUN)
        snprintf(buf, n, "servesim run workloads/chapters/%s --json OUT", c->file);
    else if (c->kind == REPRO_SWEEP)
        snprintf(buf, n, "servesim sweep workloads/chapters/%s --rates %.*s --seeds %s --json OUT", c->file,
                 (int)strcspn(c->arg, "/"), c->arg, strchr(c->arg, '/') ? strchr(c->arg, '/') + 1 : "1");
    else if (c->kind == REPRO_REPLAY)
        snprintf(buf, n, "servesim replay workloads/chapters/%s%s%s --json OUT", c->file, c->arg ? " --window-ms " : "",
                 c->arg ? c->arg : "");
    else
        snprintf(buf, n, "servesim reproduce %s  (calculator of workloads/chapters/%s)", c->name, c->file);
    return buf;
}

static const char *cmp_text(const ReproCase *c, char *buf, size_t n)
{
    if (c->cmp == '<') snprintf(buf, n, "<= %g", c->book);
    else if (c->cmp == '>') snprintf(buf, n, ">= %g", c->book);
    else snprintf(buf, n, "+-%g", c->tol);
    return buf;
}

/* Six significant digits, but whole numbers up to 10^15 in full (the
 * chapter's 15,136,811,008 B). */
static const char *num_text(double v, char *buf, size_t n)
{
    if (fabs(v) >= 1e6 && fabs(v) < 1e15 && v == floor(v)) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.6g", v);
    return buf;
}

static void print_row(FILE *f, const Result *r)
{
    const ReproCase *c = r->c;
    char tol[64], comp[64] = "-", book[64];
    if (r->has_computed) num_text(r->computed, comp, sizeof comp);
    fprintf(f, "  %-7s %-32s %12s %12s  %-12s %-6s  %s %s\n", r->status, c->name, num_text(c->book, book, sizeof book),
            comp, cmp_text(c, tol, sizeof tol), c->unit, c->chapter, c->where);
    if (r->has_roofline)
        fprintf(f, "          calibrated roofline of the same GPU (instead of the chapter's step model): %.6g %s\n",
                r->roofline, c->unit);
    if (r->msg[0]) fprintf(f, "          %s\n", r->msg);
}

static void print_detail(FILE *f, const Result *r)
{
    const ReproCase *c = r->c;
    char buf[1400], tol[64];
    fprintf(f, "%s: %s\n", c->name, r->status);
    fprintf(f, "  source:    seed %s, %s\n", c->chapter, c->where);
    if (!c->pending) {
        fprintf(f, "  input:     workloads/chapters/%s%s%s\n", c->file, r->source[0] ? " -- " : "", r->source);
        fprintf(f, "  command:   %s\n", command_of(c, buf, sizeof buf));
        fprintf(f, "  value:     %s%s\n", c->expr, c->scale != 1 ? " (scaled)" : "");
    }
    fprintf(f, "  book:      %.10g %s\n", c->book, c->unit);
    if (r->has_computed) fprintf(f, "  computed:  %.10g %s\n", r->computed, c->unit);
    fprintf(f, "  tolerance: %s\n", cmp_text(c, tol, sizeof tol));
    if (r->has_roofline) fprintf(f, "  roofline:  %.10g %s (the GPU's calibrated roofline instead of the step model)\n", r->roofline, c->unit);
    if (c->note) fprintf(f, "  note:      %s\n", c->note);
    if (r->msg[0]) fprintf(f, "  %s\n", r->msg);
}

static cJSON *result_json(const Result *r)
{
    const ReproCase *c = r->c;
    cJSON *o = cJSON_CreateObject();
    char src[3000], buf[3000];
    snprintf(src, sizeof src, "seed %s, %s%s%s", c->chapter, c->where, r->source[0] ? "; input: " : "", r->source);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "source", src);
    cJSON_AddNumberToObject(o, "book", c->book);
    if (r->has_computed) cJSON_AddNumberToObject(o, "computed", r->computed);
    else cJSON_AddNullToObject(o, "computed");
    cJSON_AddNumberToObject(o, "tolerance", c->cmp == '=' ? c->tol : 0);
    cJSON_AddStringToObject(o, "compare", c->cmp == '<' ? "at_most" : c->cmp == '>' ? "at_least" : "within");
    cJSON_AddBoolToObject(o, "pass", !strcmp(r->status, "PASS"));
    cJSON_AddStringToObject(o, "status", r->status);
    snprintf(buf, sizeof buf, "%s%s%s", c->note ? c->note : "", c->note && r->msg[0] ? "; " : "", r->msg);
    cJSON_AddStringToObject(o, "note", buf);
    cJSON_AddStringToObject(o, "unit", c->unit);
    if (!c->pending) {
        snprintf(buf, sizeof buf, "workloads/chapters/%s", c->file);
        cJSON_AddStringToObject(o, "input", buf);
        cJSON_AddStringToObject(o, "command", command_of(c, buf, sizeof buf));
        cJSON_AddStringToObject(o, "value", c->expr);
    } else {
        cJSON_AddStringToObject(o, "pending", c->pending);
    }
    if (r->has_roofline) cJSON_AddNumberToObject(o, "roofline", r->roofline);
    return o;
}

/* ------------------------------------------------------------ plots */

static int write_doc(const char *dir, const char *name, ReproKind kind, const char *file, char *out, size_t n, Err *e)
{
    const Doc *d = doc_for(kind, file, NULL);
    if (!d->doc) return err_set(e, "%s", d->err);
    snprintf(out, n, "%s/%s", dir, name);
    return jsonio_write_file(d->doc, out, 1, e);
}

static int make_plots(const char *dir)
{
    Err e = {0};
    /* the directory itself may be new; its parent must exist */
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "servesim: reproduce --plots %s: cannot create the directory: %s\n", dir, strerror(errno));
        return 1;
    }
    char a[3][1200], o[1200];
    if (write_doc(dir, "four_requests_static.json", REPRO_RUN, FOURS, a[0], sizeof a[0], &e) < 0 ||
        write_doc(dir, "four_requests_continuous.json", REPRO_RUN, FOURC, a[1], sizeof a[1], &e) < 0 ||
        write_doc(dir, "four_requests_chunked.json", REPRO_RUN, FOURK, a[2], sizeof a[2], &e) < 0) {
        fprintf(stderr, "servesim: reproduce --plots: %s\n", e.msg);
        return 1;
    }
    snprintf(o, sizeof o, "%s/four_requests.png", dir);
    char tl[] = "timeline", oo[] = "-o", tt[] = "--title";
    char t1[] = "chapter 8 (003) figures 8-5/8-6/8-7: four requests, static / continuous / chunked";
    char *av1[] = {tl, a[0], a[1], a[2], oo, o, tt, t1, NULL};
    if (plot_main(8, av1) != 0) return 1;
    char s1[1200], s2[1200];
    chapter_path(s1, sizeof s1, T311S);
    chapter_path(s2, sizeof s2, T311C);
    snprintf(o, sizeof o, "%s/table_31_1.png", dir);
    char t2[] = "chapter 31 (000) table 31.1: serial vs continuous";
    char *av2[] = {tl, s1, s2, oo, o, tt, t2, NULL};
    if (plot_main(7, av2) != 0) return 1;
    char sc[1200], sj[1200];
    chapter_path(sc, sizeof sc, "ch8_goodput_vs_rate.json");
    snprintf(sj, sizeof sj, "%s/goodput_vs_rate.json", dir);
    char rates[] = "--rates", rv[] = "0.5,1,2,4,8,16,32", seeds[] = "--seeds", sv[] = "3", js[] = "--json",
         jobs[] = "--jobs", jv[] = "1";
    char *av3[] = {sc, rates, rv, seeds, sv, js, sj, jobs, jv, NULL};
    if (plancmd_sweep(9, av3) != 0) return 1;
    snprintf(o, sizeof o, "%s/goodput_vs_rate.png", dir);
    char rk[] = "rate", t3[] = "chapter 8 (003) figures 8-33/8-34: completion throughput vs goodput";
    char *av4[] = {rk, sj, oo, o, tt, t3, NULL};
    if (plot_main(6, av4) != 0) return 1;
    printf("plots written to %s: four_requests.png, table_31_1.png, goodput_vs_rate.png (data beside them)\n", dir);
    return 0;
}

/* ------------------------------------------------------------ command */

static const char usage[] =
    "usage: servesim reproduce [CASE|all|--list] [--json OUT] [--plots DIR]\n"
    "\n"
    "The chapters' worked examples, tables and exercises (seed files 000, 002, 003):\n"
    "each case computes its value with servesim from an input file in workloads/chapters/\n"
    "and prints it beside the book's value with the tolerance. Exit status 1 if any case\n"
    "fails; cases that cannot be computed are listed as pending (with why), not failed.\n"
    "\n"
    "  all            every case (the default), one line each\n"
    "  CASE           one case in detail: source, input file, command, value, note\n"
    "                 (a prefix such as t31.2 or s8.6-board runs every case it starts)\n"
    "  --list         the cases and their status without computing them\n"
    "  --json OUT     {\"cases\": [{name, source, book, computed, tolerance, pass, note, ...}]}\n"
    "  --plots DIR    redraw the chapters' schedule figures (four requests x three schedules,\n"
    "                 table 31.1, goodput vs rate) with servesim plot\n";

static int locate_chapters(void)
{
    const char *models = paths_models_dir();
    size_t n = strlen(models);
    if (n >= 7 && !strcmp(models + n - 7, "/models"))
        snprintf(chapters_dir, sizeof chapters_dir, "%.*s/workloads/chapters", (int)(n - 7), models);
    else
        snprintf(chapters_dir, sizeof chapters_dir, "workloads/chapters");
    return 0;
}

int repro_main(int argc, char **argv)
{
    const char *which = NULL, *json = NULL, *plots = NULL;
    int list = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "--plots")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "servesim: reproduce: %s needs a value\n\n%s", argv[i], usage);
                return 2;
            }
            if (argv[i][2] == 'j') json = argv[++i];
            else plots = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "servesim: reproduce: unknown option '%s'\n\n%s", argv[i], usage);
            return 2;
        } else if (which) {
            fprintf(stderr, "servesim: reproduce: more than one case given ('%s', '%s')\n\n%s", which, argv[i], usage);
            return 2;
        } else {
            which = argv[i];
        }
    }
    Err e = {0};
    if (json && outfile_check(json, "--json", &e) < 0) {
        fprintf(stderr, "servesim: %s\n", e.msg);
        return 2;
    }
    locate_chapters();
    int all = !which || !strcmp(which, "all");
    size_t matched = 0, exact = N_CASES;
    for (size_t i = 0; i < N_CASES && !all; i++)
        if (!strcmp(cases[i].name, which)) exact = i;
    for (size_t i = 0; i < N_CASES && !all; i++)
        matched += exact < N_CASES ? i == exact : !strncmp(cases[i].name, which, strlen(which));
    if (!all && !matched) {
        fprintf(stderr, "servesim: reproduce: no case named '%s' (servesim reproduce --list shows them)\n", which);
        return 2;
    }
    Result *res = xcalloc(N_CASES, sizeof *res);
    int n_pass = 0, n_fail = 0, n_pend = 0, n = 0;
    const char *chap = "";
    static const char *const titles[][2] = {{"000", "seed 000: chapter 31, efficient serving"},
                                            {"002", "seed 002: the serving problem"},
                                            {"003", "seed 003: chapter 8, inference optimisation"}};
    int single = !all && matched == 1;
    for (size_t i = 0; i < N_CASES; i++) {
        const ReproCase *c = &cases[i];
        if (!all && (exact < N_CASES ? i != exact : strncmp(c->name, which, strlen(which)) != 0)) continue;
        Result *r = &res[n++];
        if (list) {
            *r = (Result){.c = c};
            snprintf(r->status, sizeof r->status, "%s", c->pending ? "pending" : "ready");
            if (c->pending) snprintf(r->msg, sizeof r->msg, "needs %s", c->pending);
        } else {
            evaluate(c, r);
        }
        if (c->pending) n_pend++;
        else if (!strcmp(r->status, "PASS") || !strcmp(r->status, "ready")) n_pass++;
        else if (!list) n_fail++;
        if (single) {
            print_detail(stdout, r);
            continue;
        }
        if (strcmp(chap, c->chapter)) {
            chap = c->chapter;
            for (size_t t = 0; t < 3; t++)
                if (!strcmp(titles[t][0], chap)) printf("\n%s\n", titles[t][1]);
            printf("  %-7s %-32s %12s %12s  %-12s %-6s  %s\n", "status", "case", "book", "computed", "tolerance",
                   "unit", "source");
        }
        if (list) {
            char tol[64], book[64];
            printf("  %-7s %-32s %12s %12s  %-12s %-6s  %s %s%s%s\n", r->status, c->name, num_text(c->book, book, sizeof book), "",
                   cmp_text(c, tol, sizeof tol), c->unit, c->chapter, c->where, c->pending ? "  -- needs " : "",
                   c->pending ? c->pending : "");
        } else {
            print_row(stdout, r);
        }
    }
    if (!single || list)
        printf("\n%d cases: %d %s, %d failed, %d pending (not computable from the chapter's inputs: see --list)\n", n, n_pass,
               list ? "ready" : "passed", n_fail, n_pend);
    int rc = n_fail ? 1 : 0;
    if (json && !list) {
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "cases");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, result_json(&res[i]));
        cJSON_AddNumberToObject(root, "passed", n_pass);
        cJSON_AddNumberToObject(root, "failed", n_fail);
        cJSON_AddNumberToObject(root, "pending", n_pend);
        if (jsonio_write_file(root, json, 1, &e) < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    } else if (json && list) {
        cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "cases");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(arr, result_json(&res[i]));
        if (jsonio_write_file(root, json, 1, &e) < 0) {
            fprintf(stderr, "servesim: %s\n", e.msg);
            rc = 1;
        }
        cJSON_Delete(root);
    }
    if (plots && make_plots(plots) != 0) rc = 1;
    free(res);
    docs_free();
    return rc;
}
