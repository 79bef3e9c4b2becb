/*
 * strtab.h -- a table of distinct strings, each given a number from 1 in
 * the order first seen: the writers' and the importer's interning (the
 * SQLite writer's `strings` table, an imported trace's names). The table
 * holds act_str views; the bytes are the caller's and must outlive it.
 */
#ifndef ACT_STRTAB_H
#define ACT_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "spool.h"
#include "u64map.h"

typedef struct act_strtab {
    act_u64map ids; /* hash of the bytes (the next key on a clash) -> number */
    act_str *strs;  /* number - 1 -> its bytes */
    size_t n, cap;
} act_strtab;

/* The number of the string p (n bytes), 0 when it is not in the table. */
uint64_t act_strtab_find(const act_strtab *t, const char *p, size_t n);
/* Add s, which must not be in the table (act_strtab_find said 0): its
 * number, or 0 when out of memory. */
uint64_t act_strtab_add(act_strtab *t, act_str s);
/* String number id (1 .. t->n). */
static inline act_str act_strtab_get(const act_strtab *t, uint64_t id)
{
    return t->strs[id - 1];
}
void act_strtab_free(act_strtab *t);

#endif
