/*
 * literals.c -- literal detection: a string pointer that lies in a
 * read-only segment of a loaded object always names the same bytes, so its
 * id is cached by pointer (act_str_intern_literal), for the range fast path
 * (ranges.c) and the names of sources; so is a string its caller keeps
 * unchanged for the life of the process (act_str_intern_stable).
 */
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

struct ro_query {
    uintptr_t lo, hi;
    int ro;
};

static int ro_segment_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct ro_query *q = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (q->lo >= lo && q->lo < hi) {
            q->ro = q->hi <= hi && !(ph->p_flags & PF_W);
            return 1;
        }
    }
    return 0;
}

/* Is [s, s+len] inside a read-only segment of a loaded object? Such bytes
 * cannot change while the object stays loaded. (An object unloaded and
 * another loaded at the same address with a different string at the same
 * pointer would defeat this; the cache is cleared with each new spool.) */
static int str_is_immutable(const char *s, size_t len)
{
    struct ro_query q = {(uintptr_t)s, (uintptr_t)s + len + 1, 0};
    dl_iterate_phdr(ro_segment_cb, &q);
    return q.ro;
}

/* Intern `s`, answering from the thread's pointer cache when `s` was seen
 * before and its bytes cannot change: `stable` says so (the caller's
 * promise), else a read-only segment must hold them. */
static uint32_t intern_by_pointer(const char *s, int stable)
{
    if (!s)
        return 0;
    /* A literal seen before is answered from the pointer cache, without
     * hashing it. A slot is valid for this spool only (the strings of a new
     * generation are reset when the thread takes its first chunk). */
    act_thread *t = act_rec_tls;
    if (ACT_LIKELY(t && t->chunk &&
                   t->gen == atomic_load_explicit(&act_rec_state.gen, memory_order_relaxed))) {
        const act_ptr_slot *hit = act_rec_ptr_find(t, s);
        if (hit) {
            act_rec_str_used(t, hit->id);
            return hit->id;
        }
    }
    size_t len = strlen(s);
    uint32_t id = act_str_intern(s, len);
    t = act_rec_tls; /* made by act_str_intern on a thread's first record */
    if (!id || !t || t->gen != atomic_load_explicit(&act_rec_state.gen, memory_order_relaxed))
        return id;
    act_ptr_slot *set = act_rec_ptr_set(t, s);
    if (act_rec_ptr_find(t, s) || set[0].mutable == s || set[1].mutable == s)
        return id;
    /* The newest first, in each of the two columns: a literal's (ptr, id)
     * and a writable pointer's memo. */
    if (stable || str_is_immutable(s, len)) {
        set[1].ptr = set[0].ptr;
        set[1].id = set[0].id;
        set[0].ptr = s;
        set[0].id = id;
    } else {
        set[1].mutable = set[0].mutable;
        set[0].mutable = s;
    }
    return id;
}

uint32_t act_str_intern_literal(const char *s)
{
    return intern_by_pointer(s, 0);
}

uint32_t act_str_intern_stable(const char *s)
{
    return intern_by_pointer(s, 1);
}
