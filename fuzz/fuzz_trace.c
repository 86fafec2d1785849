/* fuzz_trace.c -- every trace reader: the first byte picks the format
 * (azure, mooncake, csv, json) and skip_bad; the rest is the trace. */
#include "fuzz_common.h"

#include "trace_reader.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT) return -1;
    TraceFormat fmt = (TraceFormat)(data[0] % TRACE_FORMAT_COUNT);
    int skip_bad = (data[0] >> 4) & 1;
    static const char *names[TRACE_FORMAT_COUNT] = {"t.csv", "t.jsonl", "t.csv", "t.json"};
    const char *path = fuzz_write_file(names[fmt], data + 1, size - 1);
    if (!path) return 0;
    Err e = {0};
    TraceReader *tr = trace_reader_open(path, fmt, skip_bad, &e);
    if (!tr) {
        fuzz_tmpdir_remove();
        return 0;
    }
    TraceRecord rec;
    for (int n = 0; n < 100000; n++)
        if (trace_reader_next(tr, &rec, &e) <= 0) break;
    (void)trace_reader_skipped(tr);
    (void)trace_reader_first_skip(tr);
    trace_reader_close(tr);
    fuzz_tmpdir_remove();
    return 0;
}
