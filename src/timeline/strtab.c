/*
 * strtab.c -- distinct strings by content (strtab.h): FNV-1a of the bytes
 * is the key of a u64map; two strings whose hashes clash take the next
 * free key after it (act_strtab_find probes the same way).
 */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#include "core/vec.h"

static uint64_t hash_of(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h ? h : 1;
}

static uint64_t next_key(uint64_t k)
{
    return k + 1 ? k + 1 : 1; /* 0 is the map's empty key */
}

uint64_t act_strtab_find(const act_strtab *t, const char *p, size_t n)
{
    uint64_t id;
    for (uint64_t k = hash_of(p, n); act_u64map_get(&t->ids, k, &id); k = next_key(k)) {
        act_str o = t->strs[id - 1];
        if (o.n == n && !memcmp(o.p, p, n))
            return id;
    }
    return 0;
}

uint64_t act_strtab_add(act_strtab *t, act_str s)
{
    uint64_t k = hash_of(s.p, s.n), id;
    while (act_u64map_get(&t->ids, k, &id))
        k = next_key(k);
    if (act_vec_reserve(t->strs, t->cap, t->n + 1, 1024) || act_u64map_put(&t->ids, k, t->n + 1))
        return 0;
    t->strs[t->n++] = s;
    return t->n;
}

void act_strtab_free(act_strtab *t)
{
    act_u64map_free(&t->ids);
    free(t->strs);
    *t = (act_strtab){0};
}
