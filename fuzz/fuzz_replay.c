/* fuzz_replay.c -- the replay reader (sim/replay.h) on the input. */
#include "fuzz_common.h"

#include "replay.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT) return -1;
    char *text = fuzz_strdup(data, size);
    if (!text) return 0;
    Replay r;
    Err e = {0};
    memset(&r, 0, sizeof r);
    if (replay_load_text(text, "(fuzz)", &r, &e) == 0) replay_free(&r);
    free(text);
    return 0;
}
