/*
 * plugin.c -- the table of scripted-policy providers (plugin.h).
 */
#include <stdio.h>
#include <string.h>

#include "plugin.h"

static const PluginProvider *providers[PLUGIN_MAX_PROVIDERS];
static unsigned n_providers;

int plugin_register(const PluginProvider *p)
{
    for (unsigned i = 0; i < n_providers; i++)
        if (!strcmp(providers[i]->kind, p->kind)) {
            providers[i] = p;
            return 0;
        }
    if (n_providers == PLUGIN_MAX_PROVIDERS) return -1;
    providers[n_providers++] = p;
    return 0;
}

const PluginProvider *plugin_for(const cJSON *cfg)
{
    const cJSON *k = cJSON_IsObject(cfg) ? cJSON_GetObjectItemCaseSensitive(cfg, "kind") : NULL;
    if (!cJSON_IsString(k)) return NULL;
    for (unsigned i = 0; i < n_providers; i++)
        if (!strcmp(providers[i]->kind, k->valuestring)) return providers[i];
    return NULL;
}

const char *plugin_kinds(char *buf, size_t n)
{
    size_t used = 0;
    if (n) buf[0] = 0;
    for (unsigned i = 0; i < n_providers && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", providers[i]->kind);
    return buf;
}
