/* The registry of providers (sandbox.h: sk_provider_find, sk_provider_next),
 * made from providers.def: the one place the core names its providers.
 * Weak references let a provider's files be absent from a build (its entry
 * is then NULL and skipped). A test build names another list with
 * -DSK_PROVIDERS_DEF="<path>" (spec/fixtures/provider/providers.def adds a
 * throwaway provider to this one). */
#include <string.h>

#include "../provider.h"

#ifndef SK_PROVIDERS_DEF
#define SK_PROVIDERS_DEF "providers.def"
#endif

#define SK_PROVIDER(dir) extern const sk_provider sk_provider_##dir __attribute__((weak));
#include SK_PROVIDERS_DEF
#undef SK_PROVIDER

static const sk_provider *const registry[] = {
#define SK_PROVIDER(dir) &sk_provider_##dir,
#include SK_PROVIDERS_DEF
#undef SK_PROVIDER
};

enum { REGISTRY_SIZE = (int)(sizeof registry / sizeof registry[0]) };

const sk_provider *sk_provider_next(const sk_provider *prev)
{
    int i = 0;
    if (prev) {
        while (i < REGISTRY_SIZE && registry[i] != prev)
            i++;
        i++;
    }
    for (; i < REGISTRY_SIZE; i++)
        if (registry[i])
            return registry[i];
    return NULL;
}

const sk_provider *sk_provider_find(const char *id)
{
    for (const sk_provider *p = sk_provider_next(NULL); p; p = sk_provider_next(p))
        if (strcmp(p->id, id) == 0)
            return p;
    return NULL;
}
