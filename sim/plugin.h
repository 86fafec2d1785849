/*
 * plugin.h -- scripted policies provided by a subsystem above sim/.
 *
 * A scenario may name a scheduler, a cluster router or a prefix-cache
 * eviction rule by an object {"kind": KIND, ...} whose KIND is not built in
 * (today "lua", provided by lua/).  sim/ knows such policies only through
 * this table: the subsystem registers a provider once at start-up
 * (lua_plugins_register() in lua/lua_plugin.c, called by the front end and
 * the tests), the scenario reader checks the object with validate_* when
 * it reads the file, and the engine builder calls new_* each time it makes
 * an engine.  A kind nobody registered is reported as an unknown kind.
 * Entries a provider does not offer are NULL.
 */
#ifndef SERVESIM_PLUGIN_H
#define SERVESIM_PLUGIN_H

#include <cjson/cJSON.h>

#include "common.h"
#include "policy.h"
#include "prefix.h"

typedef struct PluginProvider {
    const char *kind;
    int (*validate_sched)(const cJSON *cfg, const char *where, const char *base_dir, Err *e);
    int (*new_sched)(const cJSON *cfg, const char *where, const char *base_dir, Scheduler *out, Err *e);
    int (*validate_router)(const cJSON *cfg, const char *where, const char *base_dir, Err *e);
    int (*new_router)(const cJSON *cfg, const char *where, const char *base_dir, Router *out, Err *e);
    /* The router's sticky failure (a script error inside route), checked by
     * the cluster after every event batch: 0, or -1 with the message. */
    int (*check_router)(const Router *rt, Err *e);
    int (*validate_evict)(const cJSON *cfg, const char *where, const char *base_dir, Err *e);
    int (*new_evict)(const cJSON *cfg, const char *where, const char *base_dir, uint32_t block_tokens,
                     EvictPolicy *out, Err *e);
} PluginProvider;

#define PLUGIN_MAX_PROVIDERS 8

/* Registers p (kept by pointer; registering the same kind again replaces
 * it).  Returns -1 when the table is full. */
int plugin_register(const PluginProvider *p);
/* The provider of cfg's "kind" when cfg is an object whose kind is a
 * registered one; NULL otherwise. */
const PluginProvider *plugin_for(const cJSON *cfg);
/* The registered kinds, comma-separated ("" when none), for messages. */
const char *plugin_kinds(char *buf, size_t n);

#endif
