/*
 * repro.h -- `servesim reproduce [CASE|all|--list] [--json OUT] [--plots DIR]`:
 * every number the three source chapters derive that a serving simulator
 * can compute, the book's value beside servesim's (reproduce/README.md).
 */
#ifndef SERVESIM_REPRO_H
#define SERVESIM_REPRO_H

int repro_main(int argc, char **argv);

#endif
