/*
 * vbands.h -- the stored error band (issue 34): what `servesim validate
 * ... --loso --bands OUT` writes, and what run, sweep and plan read to
 * print a prediction's error band (models/engines/error_bands.json).
 *
 *   {"source": "servesim validate FILE ... --fit --loso --bands OUT",
 *    "date": "YYYY-MM-DD",
 *    "basis": "leave-one-slice-out",
 *    "engines": {"<engine file's name>": {"rows": N,
 *        "ttft": {"mape": f, "bias": f}, "tpot": {"mape": f, "bias": f},
 *        "in_sample": {"ttft": {...}, "tpot": {...}},
 *        "leave_one_engine_out": {"ttft": {...}, "tpot": {...}}}}}
 *
 * Figures are fractions (0.21 = 21%); bias is the mean of (predicted -
 * measured) / measured over the engine's rows simulated.  The engine's
 * own "ttft" and "tpot" are the basis's (leave-one-slice-out);
 * "leave_one_engine_out" is absent where no other engine's rows were there
 * to fit on.  Engines are written in name order.
 */
#ifndef SERVESIM_VBANDS_H
#define SERVESIM_VBANDS_H

#include <stdint.h>

#include "common.h"

typedef struct VBandFig {
    double mape, bias;          /* fractions */
} VBandFig;

typedef struct VBand {
    char engine[32];            /* models/engines/<engine>.json: "trtllm", "trtllm-1.0", not the family */
    uint32_t rows;              /* the engine's rows simulated */
    VBandFig ttft, tpot;        /* leave-one-slice-out (the basis) */
    VBandFig in_ttft, in_tpot;  /* in-sample */
    VBandFig loeo_ttft, loeo_tpot;
    int has_loeo;               /* leave-one-engine-out was computed for the engine's family */
} VBand;

/* Writes path whole or not at all (jsonio_write_file): source, date, the
 * basis and one entry per band.  When path is already a band file, its
 * entries for engines not among b are kept (the dense and the Splitwise
 * rows are fitted in separate runs into one file), and source lists each
 * distinct command whose entries it holds, "; " between them.  An
 * existing path that is not a band file (another basis, unknown keys) is
 * refused, so a mistyped name cannot replace an engine file. */
int vbands_write(const char *path, const char *source, const char *date, const VBand *b, uint32_t n, Err *e);

/* Today's date in UTC, "YYYY-MM-DD", into out (11 bytes); $SERVESIM_DATE
 * instead when it is set (for tests and reproducible files: the date is the
 * only field that differs between two runs on the same rows). */
int vbands_date(char *out, Err *e);

#endif
