/*
 * speccmd.h -- `servesim spec-plan` and `servesim spec-verify`.
 */
#ifndef SERVESIM_SPECCMD_H
#define SERVESIM_SPECCMD_H

int speccmd_plan(int argc, char **argv);
int speccmd_verify(int argc, char **argv);

#endif
