/*
 * chrome_int.h -- what the Chrome writer's files share (chrome_json.h is
 * its interface): the encoder state that chrome_event.c (the events) and
 * chrome_members.c (the members around traceEvents) write through, and
 * the entry points chrome_json.c (the stream) calls.
 */
#ifndef ACT_CHROME_INT_H
#define ACT_CHROME_INT_H

#include <stdint.h>

#include "chrome_json.h"
#include "json_escape.h"

typedef struct esc_slot esc_slot;

#define KEY_MEMO 16 /* arg positions remembered per category (the rest share the last) */

typedef struct act_chrome_enc {
    act_timeline *tl;
    act_obuf *b;
    size_t invalid;
    int err;       /* sticky ACT_E_NOMEM of the writer's own */
    char **errors; /* the writer's own error lines (bad user metadata) */
    size_t n_errors, cap_errors;
    uint64_t errors_unlisted;
    esc_slot *esc; /* cache of escaped event strings; NULL: none */
    size_t events; /* events written so far */
    /* ',"cat":"name"' of each category, escaped once */
    char cat_txt[ACT_CAT_MAX][48];
    uint8_t cat_len[ACT_CAT_MAX];
    /* ',"pid":P,"tid":T' of the lanes written last (a few alternate);
     * two-way: a lane is in slot h or h ^ 1 (cache_slot) */
    struct lane_txt {
        uint32_t pid, tid;
        uint8_t no_tid, len; /* len 0: empty */
        char txt[48];
    } lanes[64];
    /* ',"key":' of arg keys, by address (see write_key), two-way too */
    struct key_txt {
        const char *p;
        uint32_t n;
        uint8_t len; /* 0: empty */
        uint8_t invalid;
        char txt[58];
    } keys[64];
    /* the keys slot each arg position of a category's events used last:
     * events of one kind list the same keys in the same order */
    uint8_t key_memo[ACT_CAT_MAX][KEY_MEMO];
} act_chrome_enc;

/* A string escaped into the buffer; invalid UTF-8 is counted. */
static inline void act_chrome_str_put(act_chrome_enc *w, const char *s, size_t n)
{
    w->invalid += act_json_string(w->b, s, n);
}

/* chrome_event.c: the encoder for tl into b (its caches of escaped
 * strings and lanes); the events tl holds now (all of them, or the next
 * batch of a streamed build). */
void act_chrome_enc_init(act_chrome_enc *w, act_timeline *tl, act_obuf *b);
void act_chrome_events_write(act_chrome_enc *w);

/* chrome_members.c: what comes before the events (the batch layout's
 * members, or only the array's opening when the events come first), and
 * after them (the rest, the tool's "acceltrace" object, the end); the
 * error lines the writer found (freed at the tail, or here on failure). */
void act_chrome_head_write(act_chrome_enc *w, const act_chrome_opts *o);
void act_chrome_tail_write(act_chrome_enc *w, const act_chrome_opts *o);
void act_chrome_enc_free_errors(act_chrome_enc *w);

#endif
