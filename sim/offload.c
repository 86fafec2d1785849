/*
 * offload.c -- weight offload with prefetch buffers, compressed KV
 * transfers and the cache value of a prefix (see offload.h).
 *
 * The offload hook keeps one array of `buffers` release times, sized once:
 * an iteration walks the model's layers (tens) and allocates nothing.
 */
#include "offload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "jsonio.h"

const OffloadLink offload_links[] = {
    {"pcie_gen4_x16", 32e9, "PCIe 4.0 x16: 16 GT/s x 16 lanes, ~32 GB/s per direction (half of Gen5)"},
    {"pcie_gen5_x16", 64e9,
     "PCIe 5.0 x16: 64 GB/s per direction, the figure chapter 8 (003) uses for offload and exercise 8-4"},
    {"nvlink_c2c", 450e9,
     "NVLink-C2C (Grace Hopper): 900 GB/s both directions = 450 GB/s per direction; chapter 8 (003): "
     "2.72 GB per step in 6.0 ms, exercise 8-5's 450 GB/s"},
    {NULL, 0, NULL}};

double offload_link_parse(const char *name, const char *where, Err *e)
{
    char names[256] = "";
    size_t off = 0;
    for (int i = 0; offload_links[i].name; i++) {
        if (!strcmp(name, offload_links[i].name)) return offload_links[i].bytes_per_s;
        off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", offload_links[i].name);
        if (off >= sizeof names) off = sizeof names - 1;
    }
    err_set(e, "%s: unknown link \"%s\"; expected one of %s (or a number of GB/s)", where, name, names);
    return -1;
}

double offload_mlp_layer_bytes(const ModelDesc *m)
{
    double mats = m->gated_mlp ? 3.0 : 2.0;
    double per = m->experts > 0 ? (double)m->experts * m->expert_ffn : (double)m->ffn;
    return dtype_bytes(m->weight_dtype, mats * (double)m->hidden * per);
}

int offload_plan(const ModelDesc *m, int tp, const OffloadCfg *c, OffloadPlan *out, Err *e)
{
    memset(out, 0, sizeof *out);
    if (c->every < 1 || (int)c->every > m->layers)
        return err_set(e, "offload.every: got %u, expected an integer in [1, %d] (the model's layers)", c->every,
                       m->layers);
    if (!(c->link_bytes_per_s > 0)) return err_set(e, "offload: link bandwidth must be > 0");
    out->layers = (uint32_t)m->layers / c->every;
    out->layer_bytes = offload_mlp_layer_bytes(m) / (tp > 0 ? tp : 1);
    if (c->buffers < 1 || c->buffers > out->layers)
        return err_set(e, "offload.buffers: got %u, expected an integer in [1, %u] (the offloaded layers)",
                       c->buffers, out->layers);
    out->freed_bytes = out->layers * out->layer_bytes;
    out->buffer_bytes = c->buffers * out->layer_bytes;
    out->net_bytes = out->freed_bytes - out->buffer_bytes;
    out->copy_s = out->freed_bytes / c->link_bytes_per_s;
    return 0;
}

/* The pipeline of offload.h.  rel[] (buffers entries) holds when each
 * buffer's last layer finished computing; the caller owns it. */
static double pipeline_s(int layers, uint32_t every, uint32_t buffers, double copy_one_s, double compute_s,
                         double *rel)
{
    /* t: when the current layer may start; the waits are summed apart so
     * that a step the link never delays keeps its exact compute time */
    double per_layer = compute_s / layers, t = 0, link_free = 0, wait = 0;
    uint32_t j = 0;
    for (uint32_t b = 0; b < buffers; b++) rel[b] = 0;
    for (int l = 0; l < layers; l++) {
        int offloaded = (uint32_t)(l + 1) % every == 0;
        if (offloaded) {
            double start = MAX(link_free, rel[j % buffers]);
            link_free = start + copy_one_s;
            if (link_free > t) {
                wait += link_free - t;
                t = link_free;
            }
        }
        t += per_layer;
        if (offloaded) rel[j++ % buffers] = t;
    }
    return compute_s + wait;
}

double offload_iter_s(const ModelDesc *m, const OffloadCfg *c, double layer_bytes_per_gpu, double compute_s)
{
    double *rel = xmalloc(c->buffers * sizeof *rel);
    double t = pipeline_s(m->layers, c->every, c->buffers, layer_bytes_per_gpu / c->link_bytes_per_s, compute_s,
                          rel);
    free(rel);
    return t;
}

int offload_parse(const cJSON *v, const char *where, double dflt_link, OffloadCfg *c, Err *e)
{
    static const char *const keys[] = {"every", "buffers", "link", "link_gb_per_s", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    int64_t every = 4, buffers = 1;
    if (jsonio_int(v, "every", where, 1, 1, 100000, &every, e) < 0) return -1;
    if (jsonio_int(v, "buffers", where, 0, 1, 100000, &buffers, e) < 0) return -1;
    c->every = (uint32_t)every;
    c->buffers = (uint32_t)buffers;
    return offload_link_json(v, where, dflt_link, &c->link_bytes_per_s, c->link_name, sizeof c->link_name, e);
}

int offload_link_json(const cJSON *v, const char *where, double dflt_link, double *bytes_per_s, char *name,
                      size_t name_len, Err *e)
{
    const char *ln = NULL;
    double gb = 0;
    if (jsonio_str(v, "link", where, 0, &ln, e) < 0) return -1;
    if (jsonio_num(v, "link_gb_per_s", where, 0, 1e-6, 1e6, &gb, e) < 0) return -1;
    char p[300];
    if (ln && gb > 0) return err_set(e, "%s: give \"link\" or \"link_gb_per_s\", not both", where);
    if (gb > 0) {
        *bytes_per_s = gb * 1e9;
        name[0] = '\0';
    } else if (!ln && dflt_link > 0) {
        *bytes_per_s = dflt_link;
        snprintf(name, name_len, "the hardware's host link");
    } else {
        if (!ln) ln = "pcie_gen5_x16";
        if ((*bytes_per_s = offload_link_parse(ln, jsonio_path(p, sizeof p, where, "link"), e)) < 0) return -1;
        snprintf(name, name_len, "%s", ln);
    }
    return 0;
}

/* ------------------------------------------------------------- the hook */

typedef struct OffloadHook {
    ModelDesc m;
    OffloadCfg c;
    double layer_bytes;   /* per GPU */
    double copy_one_s;
    double *rel;          /* buffers entries */
} OffloadHook;

static void offload_adjust(void *ctx, const BatchPlan *plan, const Request *reqs, CostBreakdown *cb, HookStats *st)
{
    OffloadHook *h = ctx;
    (void)plan;
    (void)reqs;
    st->has_offload = 1;
    if (!(cb->t_s > 0)) return;
    double t = pipeline_s(h->m.layers, h->c.every, h->c.buffers, h->copy_one_s, cb->t_s, h->rel);
    st->offload_iters++;
    st->offload_bytes += (double)(h->m.layers / (int)h->c.every) * h->layer_bytes;
    if (t > cb->t_s) {
        double wait = t - cb->t_s;
        st->offload_link_bound++;
        st->offload_wait_s += wait;
        cb->comm_s += wait;
        cb->t_s = t;
    }
}

static void offload_destroy(void *ctx)
{
    OffloadHook *h = ctx;
    free(h->rel);
    free(h);
}

int offload_hook_new(const ModelDesc *m, int tp, const OffloadCfg *c, BatchHook *out, Err *e)
{
    OffloadPlan pl;
    if (offload_plan(m, tp, c, &pl, e) < 0) return -1;
    OffloadHook *h = xcalloc(1, sizeof *h);
    h->m = *m;
    h->c = *c;
    h->layer_bytes = pl.layer_bytes;
    h->copy_one_s = pl.layer_bytes / c->link_bytes_per_s;
    h->rel = xcalloc(c->buffers, sizeof *h->rel);
    *out = (BatchHook){.name = "offload", .ctx = h, .adjust = offload_adjust, .destroy = offload_destroy};
    return 0;
}

/* ------------------------------------------------- compressed transfers */

double offload_kv_breakeven_dec(double bw, double ratio)
{
    return ratio < 1 ? bw / (1.0 - ratio) : INFINITY;
}

double offload_kv_transfer_s(double bytes, double bw, double ratio, double dec_bytes_per_s, int *compressed)
{
    double plain = bytes / bw;
    if (compressed) *compressed = 0;
    if (!(ratio > 0) || !(dec_bytes_per_s > 0)) return plain;
    double packed = ratio * bytes / bw + bytes / dec_bytes_per_s;
    /* equivalent to dec > bw / (1 - ratio); ties stay uncompressed */
    if (!(packed < plain)) return plain;
    if (compressed) *compressed = 1;
    return packed;
}

int offload_kv_parse(const cJSON *v, const char *where, double *ratio, double *dec_bytes_per_s, Err *e)
{
    static const char *const keys[] = {"compression_ratio", "decompress_gb_per_s", NULL};
    if (jsonio_expect_object(v, where, e) < 0 || jsonio_check_keys(v, where, keys, e) < 0) return -1;
    double r = 0, gb = 0;
    if (jsonio_num(v, "compression_ratio", where, 1, 1e-6, 1, &r, e) < 0) return -1;
    if (jsonio_num(v, "decompress_gb_per_s", where, 1, 1e-6, 1e6, &gb, e) < 0) return -1;
    if (!(r < 1)) {
        char p[300];
        return err_set(e, "%s: got %g, expected a fraction of the bytes in (0, 1) (compressed / original)",
                       jsonio_path(p, sizeof p, where, "compression_ratio"), r);
    }
    *ratio = r;
    *dec_bytes_per_s = gb * 1e9;
    return 0;
}

/* ------------------------------------------------------------ cache value */

void offload_cache_value(const ModelDesc *m, double kv_bytes_per_token, double tokens, double p_hit,
                         double flops_per_s, double link_bytes_per_s, CacheValue *out)
{
    memset(out, 0, sizeof *out);
    BatchItem it = {.req = 0, .c = (uint32_t)tokens, .h = 0, .kind = ITEM_PREFILL, .samples = 1};
    out->tokens = tokens;
    out->bytes = tokens * kv_bytes_per_token;
    out->recompute_s = cost_flops(m, &it, 1) / flops_per_s;
    out->fetch_s = out->bytes / link_bytes_per_s;
    out->maintain_s = out->fetch_s;
    out->p_hit = p_hit;
    out->value_s = p_hit * (out->recompute_s - out->fetch_s) - out->maintain_s;
    out->value_s_per_mib = out->value_s / (out->bytes / MIB);
    out->breakeven_p = out->recompute_s > out->fetch_s ? out->maintain_s / (out->recompute_s - out->fetch_s) : INFINITY;
}
