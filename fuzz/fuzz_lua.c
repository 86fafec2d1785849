/* fuzz_lua.c -- the Lua scheduler adapter fed random decisions: the input
 * bytes become a byte string inside a fixed policy (fuzz_lua_policy.h)
 * that, at every boundary, calls v:decode / prefill / admit /
 * try_admit / preempt / reject / advance_all / estimate on requests picked by
 * the bytes (or on nil and numbers), in pcall, then mostly advances and admits
 * as FCFS does, sometimes returning a decision table instead;
 * a small scenario runs to its end or to a clean error. */
#include "fuzz_common.h"
#include "fuzz_lua_policy.h"

#include <gsl/gsl_errno.h>

#include "engine.h"
#include "lua_register.h"
#include "scenario.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    gsl_set_error_handler_off();
    lua_plugins_register();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 6 || size > 4096) return -1;
    size_t len = 0;
    char *src = fuzz_lua_policy(data, size, &len);
    if (!src) return 0;
    char script[128];
    snprintf(script, sizeof script, "%s/policy.lua", fuzz_tmpdir());
    const char *p = fuzz_write_file("policy.lua", (const uint8_t *)src, len);
    free(src);
    if (!p) return 0;
    char text[1024];
    fuzz_lua_scenario(text, sizeof text, data, script);
    Scenario s;
    Err e = {0};
    int dbg = getenv("FUZZ_LUA_DEBUG") != NULL; /* prints the scenario and the outcome */
    if (dbg) fprintf(stderr, "%s\n", text);
    if (scenario_load_text(text, "(fuzz)", 0, 0, &s, &e) < 0) {
        if (dbg) fprintf(stderr, "load: %s\n", e.msg);
        fuzz_tmpdir_remove();
        return 0;
    }
    Engine *eng = scenario_engine(&s, NULL, &e);
    int rc = eng ? engine_run(eng, &e) : -1;
    if (dbg) fprintf(stderr, "run: %d %s\n", rc, rc < 0 ? e.msg : "");
    engine_free(eng);
    scenario_free(&s);
    fuzz_tmpdir_remove();
    return 0;
}
