/*
 * conflict.c -- two copies of acceltrace in one process (the OpenCL layer
 * and the preload shim, a program linked with one build and injected with
 * another): exactly one records, the others stand down.
 *
 * Mechanism (chosen because it changes nothing the program can see: no
 * environment variable, no file descriptor, no file): every copy exports
 * an object `act__owner` whose `owner` word starts at 0. To take charge, a
 * copy finds every loaded copy's object (dl_iterate_phdr, then dlsym on
 * each loaded object, keeping only a definition that lies inside that
 * object) and claims them all with compare-and-swap, in address order,
 * writing the address of its own object. It is in charge only if it claims
 * every one (or already holds it).
 *
 * Why this gives at most one owner: a copy is loaded before it looks, so of
 * two copies the one that looks second always sees the first, and both then
 * claim the first one's object; the CAS on that word lets only one through.
 * Claiming in address order means the first contended word decides, so a
 * loser holds nothing another copy needs. A copy linked statically into a
 * program that does not export its symbols (no -rdynamic) is invisible to
 * the others; it still claims its own object.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/internal.h"
#include "init/init.h"

#define ACT_OWNER_MAGIC 0x61637430776e6572ull /* "act0wner" */

/* The layout is fixed forever: other builds read it. */
typedef struct act_owner_slot {
    uint64_t magic;
    uint32_t version;
    uint32_t reserved;
    _Atomic uintptr_t owner; /* address of the owning copy's slot, 0 = free */
} act_owner_slot;

/* This copy's slot. Code here uses the local name: a reference to the
 * exported name could bind to another copy's object (symbol interposition,
 * e.g. when the other copy was preloaded). */
static act_owner_slot owner_slot = {ACT_OWNER_MAGIC, 1, 0, 0};
extern act_owner_slot act__owner __attribute__((alias("owner_slot"), visibility("default")));

#define MAX_OBJECTS 512

typedef struct loaded_obj {
    char name[512];
} loaded_obj;

typedef struct scan {
    loaded_obj *objs;
    int n;
} scan;

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan *s = arg;
    (void)size;
    if (s->n >= MAX_OBJECTS)
        return 1;
    snprintf(s->objs[s->n].name, sizeof(s->objs[s->n].name), "%s",
             info->dlpi_name ? info->dlpi_name : "");
    s->n++;
    return 0;
}

/* The act__owner defined by the object `name` itself, or NULL. */
static act_owner_slot *slot_of(const char *name)
{
    void *h = dlopen(name[0] ? name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return NULL;
    act_owner_slot *s = dlsym(h, "act__owner");
    struct link_map *mine = NULL, *owner = NULL;
    Dl_info info;
    if (s && (dlinfo(h, RTLD_DI_LINKMAP, &mine) != 0 ||
              !dladdr1(s, &info, (void **)&owner, RTLD_DL_LINKMAP) || owner != mine))
        s = NULL;
    dlclose(h);
    if (s && s->magic != ACT_OWNER_MAGIC)
        s = NULL;
    return s;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (act_owner_slot *const *)a;
    uintptr_t y = (uintptr_t) * (act_owner_slot *const *)b;
    return x < y ? -1 : x > y;
}

/* Path of the object holding `addr` (for the stand-down message). */
static const char *object_path(const void *addr)
{
    Dl_info info;
    if (dladdr(addr, &info) && info.dli_fname && *info.dli_fname)
        return info.dli_fname;
    return "the program";
}

/* Every copy's slot (our own included), sorted, duplicates removed. */
static int find_slots(act_owner_slot **slots, int max)
{
    scan s = {calloc(MAX_OBJECTS, sizeof(loaded_obj)), 0};
    int n = 0;
    slots[n++] = &owner_slot;
    if (s.objs) {
        dl_iterate_phdr(collect, &s);
        for (int i = 0; i < s.n && n < max; i++) {
            act_owner_slot *sl = slot_of(s.objs[i].name);
            if (sl)
                slots[n++] = sl;
        }
        free(s.objs);
    }
    qsort(slots, (size_t)n, sizeof(*slots), cmp_ptr);
    int m = 0;
    for (int i = 0; i < n; i++)
        if (m == 0 || slots[m - 1] != slots[i])
            slots[m++] = slots[i];
    return m;
}

int act_conflict_claim(char *why, size_t len)
{
    act_owner_slot *slots[64];
    int n = find_slots(slots, (int)ACT_ARRAY_SIZE(slots));
    uintptr_t me = (uintptr_t)&owner_slot;
    for (int i = 0; i < n; i++) {
        uintptr_t expected = 0;
        if (atomic_compare_exchange_strong(&slots[i]->owner, &expected, me) || expected == me)
            continue;
        snprintf(why, len,
                 "another copy of acceltrace (%s) is in charge of this process; this copy (%s) "
                 "stands down",
                 object_path((const void *)expected), object_path(&owner_slot));
        return ACT_E_CONFLICT;
    }
    return 0;
}
