/*
 * servext.h -- `servesim lora-size`, `servesim offload-plan` and
 * `servesim cache-value` (issue 18's calculators).
 */
#ifndef SERVESIM_SERVEXT_H
#define SERVESIM_SERVEXT_H

int servext_lora_size(int argc, char **argv);
int servext_offload_plan(int argc, char **argv);
int servext_cache_value(int argc, char **argv);

#endif
