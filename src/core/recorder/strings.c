/*
 * strings.c -- string interning: a STRING record defines an id for the
 * bytes of a name once per thread and spool; a per-thread cache finds the
 * id of a string seen before. Strings longer than a chunk allows are cut at
 * a UTF-8 character boundary and counted.
 */
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"
#include "core/recorder/recorder_int.h"

/* ---- strings ---------------------------------------------------------- */

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h | 1; /* 0 marks an empty slot */
}

/* Where to cut s[0, len) to at most `max` bytes without splitting a
 * UTF-8 sequence: back to the start of the character that the cut would
 * split (at most 3 bytes back; bytes that are not UTF-8 are cut anywhere). */
static uint32_t str_emit(act_thread *t, const char *s, size_t len)
{
    /* What a fresh chunk holds after its top: a THREAD record, or in ring
     * mode the ring's top (ring.c). */
    size_t top = act_rec_state.ring_chunks ? act_rec_ring_top_room() : ACT_THREAD_ANNOUNCE;
    size_t max = act_rec_state.chunk_size - sizeof(act_chunk_header) - sizeof(act_rec_segment) -
                 top - sizeof(act_rec_string) - 8;
    if (len > max) {
        len = act_rec_utf8_cut(s, len, max);
        act_spool_header *h = act_rec_hdr_get();
        if (h)
            atomic_fetch_add((_Atomic uint64_t *)&h->strings_truncated, 1);
    }
    size_t size = (sizeof(act_rec_string) + len + 7) & ~(size_t)7;
    act_rec_string *r = act_rec_reserve(ACT_REC_STRING, size);
    if (!r)
        return 0;
    uint32_t id = t->next_str++;
    r->h.aux = id;
    r->len = (uint32_t)len;
    r->pad = 0;
    char *dst = (char *)(r + 1);
    memcpy(dst, s, len);
    memset(dst + len, 0, size - sizeof(*r) - len);
    act_rec_commit();
    return id;
}

uint32_t act_str_intern(const char *s, size_t len)
{
    act_thread *t = act_rec_thread_get();
    if (!t || !s)
        return 0;
    /* Make sure the thread has a chunk of the current generation first, so
     * the id below belongs to the spool it will be written to. */
    if (t->gen != atomic_load_explicit(&act_rec_state.gen, memory_order_relaxed) || !t->chunk) {
        if (act_rec_chunk_acquire(t, 0) != 0) {
            act_rec_drop(ACT_REC_STRING);
            return 0;
        }
    }
    uint64_t h = str_hash(s, len);
    size_t i = (size_t)h & (ACT_STR_CACHE - 1);
    act_str_slot *slot = &t->strs[i];
    if (slot->hash == h && slot->len == len && memcmp(slot->copy, s, len) == 0) {
        act_rec_str_used(t, slot->id);
        return slot->id;
    }
    uint32_t id = str_emit(t, s, len);
    if (!id)
        return 0;
    act_rec_str_used(t, id);
    /* The cache only saves repeats; a collision just replaces the slot. */
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
        free(slot->copy);
        slot->copy = copy;
        slot->hash = h;
        slot->len = (uint32_t)len;
        slot->id = id;
        slot->ptr = s;
    }
    return id;
}

uint32_t act_str_intern_cstr(const char *s)
{
    return s ? act_str_intern(s, strlen(s)) : 0;
}
