/* fuzz_scenario.c -- scenario_load_text on the input, Lua provider registered. */
#include "fuzz_common.h"

#include <gsl/gsl_errno.h>

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
    if (size > FUZZ_MAX_INPUT) return -1;
    char *text = fuzz_strdup(data, size);
    if (!text) return 0;
    Scenario s;
    Err e = {0};
    memset(&s, 0, sizeof s);
    if (scenario_load_text(text, "(fuzz)", 0, 0, &s, &e) == 0) scenario_free(&s);
    free(text);
    return 0;
}
