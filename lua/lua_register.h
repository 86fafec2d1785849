/*
 * lua_register.h -- makes {"kind": "lua", ...} schedulers, routers and
 * eviction rules available to scenarios (sim/plugin.h).  Call once before
 * reading a scenario: the front end and the test runner do.
 */
#ifndef SERVESIM_LUA_REGISTER_H
#define SERVESIM_LUA_REGISTER_H

void lua_plugins_register(void);

#endif
