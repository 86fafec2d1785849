/*
 * calib_report.h -- how good the calibration is: fit quality on NVIDIA's
 * measured tables (held-out shapes), the cross-source check against
 * Vidur's H100 measurements, and measured-vs-fitted reports of a profile.
 *
 * The thresholds below are issue 7's acceptance targets; tests assert
 * them and `servesim calib quality` prints them next to the measurements.
 */
#ifndef SERVESIM_CALIB_REPORT_H
#define SERVESIM_CALIB_REPORT_H

#include <stdio.h>

#include "calib_fit.h"
#include "hw.h"

#define CALIB_GEMM_MEDIAN_MAX 0.08  /* BF16 GEMM, held-out median |rel err| */
#define CALIB_GEMM_P90_MAX 0.20     /* ... and p90 */
#define CALIB_ATTN_MEDIAN_MAX 0.12  /* prefill and decode attention, held-out median */
#define CALIB_CROSS_MEDIAN_MAX 0.15 /* Vidur H100 Llama-2-7B per-layer GEMM time, median */

/* ../shared/data beside the repository, or $SERVESIM_SHARED_DATA. */
const char *calib_data_dir(char *buf, size_t n);

/* Reference peaks of a hardware description, as fit options. */
void calib_opts_from_hw(CalibFitOpts *o, const HwDesc *h);

/* Vidur mlp.csv rows of one TP degree predicted by a profile's GEMM
 * model.  "layer": per token count, QKV + O + gate/up + down summed (the
 * per-layer operator time); "op": each projection on its own. */
typedef struct CalibCross {
    size_t layer_n, op_n;
    double layer_median, layer_p90;
    double op_median, op_p90;
} CalibCross;

int calib_crosscheck(const Profile *p, const MeasSet *vidur, int tp, CalibCross *out, Err *e);

typedef struct CalibQualityGpu {
    char dir[32];        /* aiconfigurator folder, e.g. "h100_sxm" */
    ProfFitStats gemm, prefill, decode; /* held-out statistics */
} CalibQualityGpu;

typedef struct CalibQuality {
    CalibQualityGpu gpu[2]; /* H100-SXM, H200-SXM */
    CalibCross cross;       /* Vidur H100 Llama-2-7B TP 1 vs the H100 fit */
} CalibQuality;

/* Validation fits (4/5 of the shapes) of BF16 GEMM, prefill and decode
 * attention on H100 and H200, and the cross-source check.  A few seconds. */
int calib_quality(const char *data_dir, CalibQuality *q, Err *e);
/* 1 when every target above is met. */
int calib_quality_ok(const CalibQuality *q);
void calib_quality_print(FILE *f, const CalibQuality *q);

/* The per-engine profiles (models/profiles/<hw>-<engine>.json for hw in
 * h100-sxm, h200-sxm, b200, a100-sxm-80gb and engine in trtllm, vllm,
 * sglang): each class's shapes and held-out / in-sample median and p90, as
 * their fit blocks record them (no refit).  Returns the profiles printed;
 * one that is missing or does not load is named. */
int calib_quality_profiles_print(FILE *f);

/* Per operator class: shapes, median / p90 |rel err| and median signed
 * error of the profile against measurements, and a few measured-vs-fitted
 * rows spread over the latency range.  Returns the classes compared. */
int calib_report_measured(FILE *f, const Profile *p, const MeasSet *ms);

#endif
