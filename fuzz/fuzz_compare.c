/* fuzz_compare.c -- compare's readers (cli/compare.h): cJSON_Parse, then
 * compare_from_json; two parsed sides are compared as the command does. */
#include "fuzz_common.h"

#include <cjson/cJSON.h>

#include "compare.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT) return -1;
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    CmpSide side;
    Err e = {0};
    if (compare_from_json(root, "(fuzz)", &side, &e) == 0) {
        char buf[512];
        (void)compare_workload_diff(&side, &side, buf, sizeof buf);
        cJSON *j = compare_json(&side, &side);
        char *txt = j ? cJSON_PrintUnformatted(j) : NULL;
        free(txt);
        cJSON_Delete(j);
    }
    cJSON_Delete(root);
    return 0;
}
