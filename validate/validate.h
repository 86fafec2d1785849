/*
 * validate.h -- `servesim validate`: simulated against measured serving
 * runs (validate/README.md).
 *
 * Each row of a measured file becomes a scenario -- model by Hugging Face
 * id, GPU, serving engine, precision, TP, fixed input/output lengths, the
 * benchmark client's concurrency -- that is simulated and compared:
 * measured vs predicted mean TTFT and TPOT, relative errors, and per slice
 * (model, GPU, engine, precision) and overall the MAPE, the median absolute
 * error, the signed bias and the share of rows within +-10%.  Rows that
 * cannot be modelled are listed with the reason and counted.
 *
 * The engine constants that no kernel table holds (host time per
 * iteration and per sequence, per-request overhead) are fitted by --fit;
 * --loso reports the leave-one-slice-out error (fit without a slice,
 * predict it) and the leave-one-engine-out error (fit without an engine
 * family, predict it); --bands stores them per engine (vbands.h).  Several
 * files of one format are validated as one set of rows.
 */
#ifndef SERVESIM_VALIDATE_H
#define SERVESIM_VALIDATE_H

int validate_main(int argc, char **argv);
extern const char validate_usage[];

#endif
