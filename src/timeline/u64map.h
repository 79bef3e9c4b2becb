/*
 * u64map.h -- a small open-addressing hash map from nonzero 64-bit keys to
 * 64-bit values, used by the reader (string tables) and the builder
 * (ranges by external reference, lanes). Key 0 is reserved as "empty".
 */
#ifndef ACT_U64MAP_H
#define ACT_U64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct act_u64map {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap; /* power of two, or 0 */
    size_t n;
} act_u64map;

/* Insert or replace. Returns 0 or ACT_E_NOMEM (ACT_E_INVAL for key 0). */
int act_u64map_put(act_u64map *m, uint64_t key, uint64_t val);
/* Returns 1 and sets *val when found, else 0. */
int act_u64map_get(const act_u64map *m, uint64_t key, uint64_t *val);
/* Remove key (nothing when absent); the table keeps its size. */
void act_u64map_del(act_u64map *m, uint64_t key);
void act_u64map_free(act_u64map *m);

#endif
