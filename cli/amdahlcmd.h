/*
 * amdahlcmd.h -- `servesim amdahl`: what speeding up one part of a task buys.
 */
#ifndef SERVESIM_AMDAHLCMD_H
#define SERVESIM_AMDAHLCMD_H

int amdahlcmd_main(int argc, char **argv);

#endif
