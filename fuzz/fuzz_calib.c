/* fuzz_calib.c -- the measurement importer (calib/calib_meas.h): the first
 * byte picks the file name (the importer tells some kinds by name), the rest
 * is the CSV. */
#include "fuzz_common.h"

#include "calib_meas.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_limits();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FUZZ_MAX_INPUT) return -1;
    static const char *names[] = {
        "meas.csv", "gemm_perf.csv", "context_attention_perf.csv",
        "generation_attention_perf.csv", "custom_allreduce_perf.csv",
        "nccl_perf.csv", "mlp.csv", "attention.csv", "all_reduce.csv",
    };
    const char *path = fuzz_write_file(names[data[0] % (sizeof names / sizeof names[0])], data + 1, size - 1);
    if (!path) return 0;
    MeasSet s;
    Err e = {0};
    calib_meas_init(&s);
    (void)calib_meas_import(&s, path, &e);
    calib_meas_free(&s);
    fuzz_tmpdir_remove();
    return 0;
}
