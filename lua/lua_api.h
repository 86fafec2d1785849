/*
 * lua_api.h -- the `servesim` module of experiment scripts (`servesim lua
 * SCRIPT.lua`): runs scenarios and hands back the JSON report as Lua
 * tables, lists and describes bundled models and GPUs, writes JSON and CSV.
 *
 *   servesim.run(scenario [, opts]) -> report, timing
 *       scenario: a path to a scenario file or a table in the scenario
 *       format; opts: {requests = false} leaves out report.requests,
 *       {seed = N} overrides the seed.  report is the `--json` report
 *       ({scenario, summary, requests}); timing = {load_s, run_s, report_s}
 *       of wall time.  A bad scenario or a failing policy raises an error.
 *   servesim.load(path) -> the JSON file as a table
 *   servesim.models(), servesim.hardware() -> sorted lists of bundled names
 *   servesim.info{model = NAME [, hardware = NAME, tp = N, kv_dtype = T]}
 *       -> what `servesim info --json` prints
 *   servesim.write_json(path, t), servesim.write_csv(path, rows [, columns])
 *   servesim.plot{...} -> raises until the plots issue lands
 *   servesim.clock() -> wall seconds (monotonic), for timing experiments
 *   servesim.sweep(scenario, {rates = {...} | auto = true [, seeds = N,
 *       target = A, jobs = N]}) -> what `servesim sweep --json` writes
 *       ({points = {...}, knee = {...}, ...}; planner/sweep.h)
 *   servesim.plan(plan [, {jobs = N}]) -> what `servesim plan --json`
 *       writes ({candidates = {...}, recommended = NAME, ...}; planner/plan.h)
 *       scenario / plan: a file path or a table in that format
 *   servesim.args -> the script's arguments; servesim.script -> its path
 *
 * Only experiment scripts get this module: policies never do (they run
 * inside a simulation and must not start another or write files).
 */
#ifndef SERVESIM_LUA_API_H
#define SERVESIM_LUA_API_H

#include <lua.h>

/* Pushes the module table (a lua_CFunction: usable with
 * lua_sandbox_preload and luaL_requiref). */
int lua_api_open(lua_State *L);


#endif
