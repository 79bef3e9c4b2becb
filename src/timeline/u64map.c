/*
 * u64map.c -- open addressing with linear probing; grows at 50% load.
 */
#include "u64map.h"

#include <stdlib.h>

#include "acceltrace.h"

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int grow(act_u64map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *k = calloc(ncap, sizeof(*k));
    uint64_t *v = calloc(ncap, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        return ACT_E_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t s = slot_of(m->keys[i], ncap);
        while (k[s])
            s = (s + 1) & (ncap - 1);
        k[s] = m->keys[i];
        v[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = v;
    m->cap = ncap;
    return 0;
}

int act_u64map_put(act_u64map *m, uint64_t key, uint64_t val)
{
    if (!key)
        return ACT_E_INVAL;
    if ((m->n + 1) * 2 > m->cap && grow(m))
        return ACT_E_NOMEM;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] && m->keys[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (!m->keys[s]) {
        m->keys[s] = key;
        m->n++;
    }
    m->vals[s] = val;
    return 0;
}

int act_u64map_get(const act_u64map *m, uint64_t key, uint64_t *val)
{
    if (!key || !m->cap)
        return 0;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s]) {
        if (m->keys[s] == key) {
            *val = m->vals[s];
            return 1;
        }
        s = (s + 1) & (m->cap - 1);
    }
    return 0;
}

void act_u64map_del(act_u64map *m, uint64_t key)
{
    if (!key || !m->cap)
        return;
    size_t mask = m->cap - 1, s = slot_of(key, m->cap);
    while (m->keys[s] && m->keys[s] != key)
        s = (s + 1) & mask;
    if (!m->keys[s])
        return;
    /* Backward shift: entries after the hole that probed past it move
     * into it, so that no lookup stops early at an empty slot. */
    for (size_t j = s;;) {
        m->keys[s] = 0;
        size_t home;
        do {
            j = (j + 1) & mask;
            if (!m->keys[j]) {
                m->n--;
                return;
            }
            home = slot_of(m->keys[j], m->cap);
        } while (s <= j ? (s < home && home <= j) : (s < home || home <= j));
        m->keys[s] = m->keys[j];
        m->vals[s] = m->vals[j];
        s = j;
    }
}

void act_u64map_free(act_u64map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->cap = m->n = 0;
}
