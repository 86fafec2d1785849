/*
 * launch.h -- the commands that start a scenario's deployment on its real
 * serving engine (`plan --emit`, issue 37).
 *
 * The engine file's "launch" object says how (models/engines/NAME.json; each
 * flag's source, the engine's documentation, in its "source"):
 *
 *   "launch": {"command": "vllm serve {model}",
 *              "flags": [[PROPERTY, "--flag {}"], ...],
 *              "yaml":  [[PROPERTY, "key: {}"], ...],     (TensorRT-LLM's extra options file)
 *              "source": "..."}
 *
 * A flag is written when the scenario has its property, "{}" replaced by
 * the value: tp, max_running (the scheduler's), token_budget (chunked: the
 * token budget; continuous: max_num_tokens), mem_fraction (the engine's KV
 * memory fraction), kv_fp8 (an FP8 KV cache), prefix_on / prefix_off,
 * mixed_on / mixed_off (prefill and decode in one step), spec_ngram (lookup
 * speculation; "{}" = its draft length), disagg_prefill / disagg_decode (the
 * pool's role), yaml (the YAML file's name, when any "yaml" line applies).
 * {model} is the model's Hugging Face id (its file's "hf_id"; the -FP8 one
 * for FP8 weights).  A scenario property the table cannot express (a draft
 * model, a KV dtype it lacks) is named in a comment, never dropped
 * silently.  Every value is shell-quoted.
 */
#ifndef SERVESIM_LAUNCH_H
#define SERVESIM_LAUNCH_H

#include <cjson/cJSON.h>

#include "common.h"
#include "scenario.h"

/* Writes DIR/NAME.sh (and DIR/NAME.yaml when the engine takes one): one
 * command per pool (aggregated: one; disaggregated: prefill and decode),
 * each to run on every replica the scenario has.  scen is the scenario's
 * JSON (its "model" names the Hugging Face id), s the loaded scenario. */
int launch_write(const char *dir, const char *name, const cJSON *scen, const Scenario *s, Err *e);

#endif
