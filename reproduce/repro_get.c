/*
 * repro_get.c -- repro_get (repro_calc.h): one number out of a computed
 * document by a path of keys and selectors, or two paths joined by " / "
 * or " - ".
 */
#include <stdlib.h>
#include <string.h>

#include "repro_calc.h"

static int get_one(const cJSON *doc, const char *expr, size_t len, double *out, Err *e)
{
    const cJSON *cur = doc;
    size_t i = 0;
    char tok[128];
    while (i < len) {
        if (expr[i] == '.') i++;
        size_t j = i;
        if (expr[i] == '[') {
            size_t c = i + 1;
            while (c < len && expr[c] != ']') c++;
            if (c >= len || c - i - 1 >= sizeof tok) break;
            memcpy(tok, expr + i + 1, c - i - 1);
            tok[c - i - 1] = 0;
            char *end;
            long idx = strtol(tok, &end, 10);
            if (!*end && cJSON_IsArray(cur)) {
                cur = cJSON_GetArrayItem(cur, (int)idx);
            } else {
                const cJSON *x, *hit = NULL;
                cJSON_ArrayForEach(x, cur)
                {
                    const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
                    if (cJSON_IsString(id) && !strcmp(id->valuestring, tok)) hit = x;
                }
                cur = hit;
            }
            i = c + 1;
        } else {
            while (j < len && expr[j] != '.' && expr[j] != '[') j++;
            if (j - i >= sizeof tok || j == i) break;
            memcpy(tok, expr + i, j - i);
            tok[j - i] = 0;
            cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
            i = j;
        }
        if (!cur) break;
    }
    if (i < len || !cur) return err_set(e, "no value at \"%.*s\" (stopped at \"%.*s\")", (int)len, expr, (int)(len - (i < len ? i : len)), expr + (i < len ? i : len));
    if (cJSON_IsBool(cur)) {
        *out = cJSON_IsTrue(cur);
        return 0;
    }
    if (!cJSON_IsNumber(cur)) return err_set(e, "\"%.*s\" is not a number", (int)len, expr);
    *out = cur->valuedouble;
    return 0;
}

/* expr := term (" + " | " - " term)*, term := factor (" * " | " / " factor)*,
 * factor := number | path | "(" expr ")"; operators stand between spaces
 * so that a path may hold '-'. */
typedef struct ExprCur {
    const cJSON *doc;
    const char *s;
    Err *e;
} ExprCur;

static int expr_sum(ExprCur *c, double *out);

static void expr_skip(ExprCur *c)
{
    while (*c->s == ' ') c->s++;
}

static int expr_factor(ExprCur *c, double *out)
{
    expr_skip(c);
    if (*c->s == '(') {
        c->s++;
        if (expr_sum(c, out) < 0) return -1;
        expr_skip(c);
        if (*c->s != ')') return err_set(c->e, "expected ')' at \"%s\"", c->s);
        c->s++;
        return 0;
    }
    size_t n = 0;
    while (c->s[n] && c->s[n] != ' ' && c->s[n] != ')') n++;
    if (!n) return err_set(c->e, "expected a path or a number at \"%s\"", c->s);
    char *end;
    double v = strtod(c->s, &end);
    if (end == c->s + n) {
        *out = v;
    } else if (get_one(c->doc, c->s, n, out, c->e) < 0) {
        return -1;
    }
    c->s += n;
    return 0;
}

/* Operands of `next` joined left to right by the two operators of one
 * precedence level ("*" and "/", or "+" and "-"; each followed by a space). */
static int expr_level(ExprCur *c, double *out, char op1, char op2, int (*next)(ExprCur *, double *))
{
    if (next(c, out) < 0) return -1;
    for (;;) {
        expr_skip(c);
        char op = *c->s;
        if ((op != op1 && op != op2) || c->s[1] != ' ') return 0;
        c->s++;
        double b;
        if (next(c, &b) < 0) return -1;
        *out = op == '*' ? *out * b : op == '/' ? *out / b : op == '+' ? *out + b : *out - b;
    }
}

static int expr_term(ExprCur *c, double *out) { return expr_level(c, out, '*', '/', expr_factor); }

static int expr_sum(ExprCur *c, double *out)
{
    return expr_level(c, out, '+', '-', expr_term);
}

int repro_get(const cJSON *doc, const char *expr, double *out, Err *e)
{
    ExprCur c = {doc, expr, e};
    if (expr_sum(&c, out) < 0) return -1;
    expr_skip(&c);
    if (*c.s) return err_set(e, "unexpected \"%s\" in \"%s\"", c.s, expr);
    return 0;
}

