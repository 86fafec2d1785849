/*
 * replay.c -- reading a given schedule into request records (see replay.h).
 */
#include "replay.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonio.h"

void replay_free(Replay *r)
{
    free(r->reqs);
    free(r->token_times);
    free(r->names);
    for (uint32_t k = 0; k < r->n_cls; k++) free(r->cls_names[k]);
    free(r->cls_names);
    free(r->slo_table);
    memset(r, 0, sizeof *r);
}

void replay_rundata(const Replay *r, RunData *rd)
{
    *rd = (RunData){.reqs = r->reqs, .n = r->n, .token_times = r->token_times};
}

static uint32_t class_index(Replay *rp, const char *name)
{
    for (uint32_t k = 0; k < rp->n_cls; k++)
        if (!strcmp(rp->cls_names[k], name)) return k;
    rp->cls_names = xrealloc(rp->cls_names, (rp->n_cls + 1) * sizeof *rp->cls_names);
    rp->cls_names[rp->n_cls] = xstrdup(name);
    return rp->n_cls++;
}

static int ms_to_ns(double ms, int64_t *out)
{
    if (!(ms >= 0) || ms > 1e12) return -1;
    *out = llround(ms * 1e6);
    return 0;
}

static int parse_request(Replay *rp, const cJSON *it, const char *rp_where, uint32_t i, uint64_t *tok, char **np,
                         Err *e)
{
    static const char *const keys[] = {"id", "arrival_ms", "prompt_tokens", "output_tokens", "token_times_ms",
                                       "status", "class", "deadline_ms", "correct", "cancelled_ms", NULL};
    static const char *const states[] = {"finished", "rejected", "cancelled", NULL};
    if (jsonio_expect_object(it, rp_where, e) < 0 || jsonio_check_keys(it, rp_where, keys, e) < 0) return -1;
    Request *r = &rp->reqs[i];
    request_init(r);
    const char *id = NULL, *cls = NULL;
    if (jsonio_str(it, "id", rp_where, 0, &id, e) < 0) return -1;
    if (id) strcpy(*np, id);
    else sprintf(*np, "%u", i);
    r->id = *np;
    *np += strlen(*np) + 1;
    double arr_ms, dl_ms = -1;
    int64_t p, o;
    int status = 0, correct = -1;
    if (jsonio_num(it, "arrival_ms", rp_where, 1, 0, 1e12, &arr_ms, e) < 0) return -1;
    if (jsonio_int(it, "prompt_tokens", rp_where, 1, 0, 100000000, &p, e) < 0) return -1;
    if (jsonio_int(it, "output_tokens", rp_where, 1, 1, 100000000, &o, e) < 0) return -1;
    if (jsonio_enum(it, "status", rp_where, 0, states, &status, e) < 0) return -1;
    if (jsonio_str(it, "class", rp_where, 0, &cls, e) < 0) return -1;
    if (jsonio_num(it, "deadline_ms", rp_where, 0, 0, 1e12, &dl_ms, e) < 0) return -1;
    if (jsonio_bool(it, "correct", rp_where, 0, &correct, e) < 0) return -1;
    ms_to_ns(arr_ms, &r->t_arrive_ns);
    r->prompt_tokens = (uint32_t)p;
    r->output_tokens = (uint32_t)o;
    r->cls = cls ? class_index(rp, cls) : 0;
    if (dl_ms >= 0) r->deadline_ns = llround(dl_ms * 1e6);
    r->correct = (int8_t)correct;
    r->t_first_sched_ns = r->t_first_token_ns = r->t_last_token_ns = r->t_finish_ns = -1;
    r->token_off = *tok;
    const cJSON *tt = cJSON_GetObjectItemCaseSensitive(it, "token_times_ms");
    char tp[320];
    jsonio_path(tp, sizeof tp, rp_where, "token_times_ms");
    if (status == 1) {
        r->state = REQ_REJECTED;
        r->reject_reason = REJECT_ADMISSION;
        r->t_finish_ns = r->t_arrive_ns;
        if (tt && cJSON_GetArraySize(tt) > 0) return err_set(e, "%s: a rejected request emits no tokens", tp);
        return 0;
    }
    /* cancelled by its client at cancelled_ms, after the tokens it got */
    int64_t cancel_ns = -1;
    if (status == 2) {
        double c_ms;
        if (jsonio_num(it, "cancelled_ms", rp_where, 1, arr_ms, 1e12, &c_ms, e) < 0) return -1;
        ms_to_ns(c_ms, &cancel_ns);
    } else if (cJSON_GetObjectItemCaseSensitive(it, "cancelled_ms")) {
        return err_set(e, "%s: \"cancelled_ms\" needs \"status\": \"cancelled\"", rp_where);
    }
    if (!tt && status == 2) {
        r->state = REQ_CANCELLED;
        r->t_cancel_ns = r->t_finish_ns = cancel_ns;
        return 0;
    }
    if (!tt) return err_set(e, "%s: missing key \"token_times_ms\" (or give \"status\": \"rejected\")", rp_where);
    if (!cJSON_IsArray(tt)) return err_set(e, "%s: expected an array of emission times in ms", tp);
    int len = cJSON_GetArraySize(tt);
    if (status == 2 && (int64_t)len >= o)
        return err_set(e, "%s: got %d times, expected fewer than output_tokens (%lld): a cancelled request stopped "
                          "before its last token", tp, len, (long long)o);
    if (status != 2 && (int64_t)len != o)
        return err_set(e, "%s: got %d times, expected one per output token (%lld)", tp, len, (long long)o);
    int64_t prev = r->t_arrive_ns;
    int k = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tt) {
        int64_t ns;
        if (!cJSON_IsNumber(t) || ms_to_ns(t->valuedouble, &ns) < 0)
            return err_set(e, "%s[%d]: expected a time in ms >= 0", tp, k);
        if (ns < prev)
            return err_set(e, "%s[%d]: got %g ms, earlier than %s (%g ms)", tp, k, t->valuedouble,
                           k ? "the previous token" : "the arrival", (double)prev / 1e6);
        if (k > 0 && ns - prev > r->itl_max_ns) r->itl_max_ns = ns - prev;
        rp->token_times[(*tok)++] = ns;
        prev = ns;
        k++;
    }
    r->generated = (uint32_t)len;
    if (status == 2) {
        if (cancel_ns < prev)
            return err_set(e, "%s.cancelled_ms: got %g ms, earlier than its last token (%g ms)", rp_where,
                           (double)cancel_ns / 1e6, (double)prev / 1e6);
        if (len > 0) r->t_first_token_ns = rp->token_times[r->token_off];
        r->t_last_token_ns = len > 0 ? prev : -1;
        r->state = REQ_CANCELLED;
        r->t_cancel_ns = r->t_finish_ns = cancel_ns;
        return 0;
    }
    r->t_first_token_ns = rp->token_times[r->token_off];
    r->t_last_token_ns = r->t_finish_ns = prev;
    r->state = REQ_FINISHED;
    return 0;
}

static int id_cmp(const void *a, const void *b)
{
    const Request *x = *(const Request *const *)a, *y = *(const Request *const *)b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x < y ? -1 : x > y);
}

/* Ids name requests in every output; two requests with one id would be
 * one row twice (run refuses them too). */
static int check_unique_ids(const Replay *rp, const char *where, Err *e)
{
    const Request **by = xmalloc(rp->n * sizeof *by);
    for (uint32_t i = 0; i < rp->n; i++) by[i] = &rp->reqs[i];
    qsort(by, rp->n, sizeof *by, id_cmp);
    int rc = 0;
    for (uint32_t i = 1; i < rp->n && rc == 0; i++)
        if (!strcmp(by[i - 1]->id, by[i]->id))
            rc = err_set(e, "%s[%u]: duplicate request id \"%s\" (also requests[%u])", where,
                         (unsigned)(by[i] - rp->reqs), by[i]->id, (unsigned)(by[i - 1] - rp->reqs));
    free((void *)by);
    return rc;
}

static int parse(Replay *rp, const cJSON *root, const char *name, Err *e)
{
    static const char *const keys[] = {"requests", "price", "slo", "metrics", "name", "description", "source", NULL};
    if (jsonio_expect_object(root, name, e) < 0 || jsonio_check_keys(root, name, keys, e) < 0) return -1;
    char p[256], ip[320];
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "requests");
    jsonio_path(p, sizeof p, name, "requests");
    if (!arr) return err_set(e, "%s: missing key \"requests\"", name);
    if (jsonio_expect_array(arr, p, e) < 0) return -1;
    int n = cJSON_GetArraySize(arr);
    if (n < 1) return err_set(e, "%s: empty; expected at least one request", p);
    rp->n = (uint32_t)n;
    rp->reqs = xcalloc(rp->n, sizeof *rp->reqs);
    size_t names = 0, tokens = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *tt = cJSON_GetObjectItemCaseSensitive(it, "token_times_ms");
        names += (cJSON_IsString(id) ? strlen(id->valuestring) : 12) + 1;
        tokens += cJSON_IsArray(tt) ? (size_t)cJSON_GetArraySize(tt) : 0;
    }
    rp->names = xmalloc(names + 1);
    rp->token_times = xmalloc((tokens ? tokens : 1) * sizeof *rp->token_times);
    class_index(rp, "default");
    char *np = rp->names;
    uint64_t tok = 0;
    uint32_t i = 0;
    cJSON_ArrayForEach(it, arr) {
        jsonio_index(ip, sizeof ip, p, (int)i);
        if (parse_request(rp, it, ip, i, &tok, &np, e) < 0) return -1;
        i++;
    }
    if (check_unique_ids(rp, p, e) < 0) return -1;
    rp->mcfg.price = (Price){.usd_per_gpu_hour = 0, .gpus = 1, .billing = BILL_EXACT};
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "price"))) {
        jsonio_path(p, sizeof p, name, "price");
        if (mcfg_parse_price(v, p, 1, &rp->mcfg.price, e) < 0) return -1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "slo"))) {
        jsonio_path(p, sizeof p, name, "slo");
        if (mcfg_parse_slo(v, p, &rp->slo, &rp->slo_classes, e) < 0) return -1;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "metrics"))) {
        jsonio_path(p, sizeof p, name, "metrics");
        if (mcfg_parse_metrics(v, p, &rp->mcfg, e) < 0) return -1;
    }
    rp->slo_table = xmalloc(rp->n_cls * sizeof *rp->slo_table);
    mcfg_resolve_classes(&rp->slo_classes, &rp->slo, (const char *const *)rp->cls_names, rp->n_cls, rp->slo_table);
    rp->mcfg.slo = rp->slo;
    rp->mcfg.slo_by_cls = rp->slo_table;
    rp->mcfg.cls_names = (const char *const *)rp->cls_names;
    rp->mcfg.n_cls = rp->n_cls;
    return 0;
}

int replay_load_text(const char *text, const char *name, Replay *out, Err *e)
{
    memset(out, 0, sizeof *out);
    cJSON *root = jsonio_parse(text, name, e);
    if (!root) return -1;
    int rc = parse(out, root, name, e);
    cJSON_Delete(root);
    if (rc < 0) replay_free(out);
    return rc;
}

int replay_load(const char *path, Replay *out, Err *e)
{
    char *text = read_text_file(path, NULL, e);
    if (!text) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    int rc = replay_load_text(text, path, out, e);
    free(text);
    return rc;
}
