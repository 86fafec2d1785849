/*
 * lua_register.c -- the "lua" entry of sim/'s plug-in table.
 */
#include "lua_register.h"
#include "lua_evict.h"
#include "lua_router.h"
#include "lua_sched.h"
#include "plugin.h"

static int new_evict(const cJSON *cfg, const char *where, const char *base_dir, uint32_t block_tokens,
                     EvictPolicy *out, Err *e)
{
    if (lua_evict_new(cfg, where, base_dir, out, e) < 0) return -1;
    lua_evict_set_block_tokens(out, block_tokens);
    return 0;
}

static const PluginProvider lua_provider = {
    .kind = "lua",
    .validate_sched = lua_sched_validate,
    .new_sched = lua_sched_new,
    .validate_router = lua_router_validate,
    .new_router = lua_router_new,
    .check_router = lua_router_check,
    .validate_evict = lua_evict_validate,
    .new_evict = new_evict,
};

void lua_plugins_register(void) { (void)plugin_register(&lua_provider); }
