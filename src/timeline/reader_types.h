/*
 * reader_types.h -- the spool reader's walk state (a segment, a walk's
 * string tables) and what its inline decoder (reader_int.h) calls out of
 * line (reader_decode.c): problems reported, strings defined and looked
 * up, threads noted. Internal to the reader's files.
 */
#ifndef ACT_TIMELINE_READER_TYPES_H
#define ACT_TIMELINE_READER_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "spool.h"
#include "u64map.h"

typedef struct act_sp_seg {
    uint64_t seq;
    uint32_t serial;
    uint32_t chunk;
    size_t begin, end; /* byte offsets in the file */
    /* Ring spools (record.h R4): where its SEGMENT record is, the R4
     * `before` of its thread (0: none), and 1 when it precedes a hole in
     * its thread's chunks: only its definitions are read (reader.c,
     * ring_cut). */
    size_t top;
    uint32_t before;
    uint32_t cut;
} segment;

/* Decoding state of one walk over the segments: the string tables as they
 * stand at the current record (a string id may be redefined later). */
typedef struct reader {
    act_spool *sp;
    int survey; /* 1: the walk of act_spool_open (counts, problems) */
    size_t cap_segs;
    size_t read_since_drop;    /* bytes read since the mapping was last dropped */
    uint64_t raw_min, raw_max; /* survey: earliest (nonzero) / latest raw time */
    act_u64map strings;        /* (serial << 32 | id) -> index + 1 into strs */
    act_str *strs;
    size_t n_strs, cap_strs;
    uint64_t unknown_strings;
#define STR_HITS 8
    struct str_hit {
        uint64_t key; /* (serial << 32 | id); 0: empty (id 0 is never looked up) */
        size_t idx;   /* into strs */
    } hits[STR_HITS];
} reader;

/* Smallest size of a record of each kind (reader_decode.c). */
extern const uint32_t act_rd_min_size[ACT_REC_KIND_MAX];

/* A problem of spool `sp`, kept for its report (at most
 * ACT_SPOOL_MAX_ERRORS lines, all counted). */
void act_rd_problem(act_spool *sp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Problems are reported by the survey only; the iterator's walk decodes
 * the same bytes again and would only repeat them. */
#define rd_problem(rd, ...)                                                                        \
    do {                                                                                           \
        if ((rd)->survey)                                                                          \
            act_rd_problem((rd)->sp, __VA_ARGS__);                                                 \
    } while (0)

int act_rd_str_define(reader *rd, uint32_t serial, uint32_t id, const char *p, uint32_t n);
act_str act_rd_str_get_slow(reader *rd, uint32_t serial, uint32_t id, uint64_t key,
                            struct str_hit *c);
int act_rd_thread_set(act_spool *sp, uint32_t serial, uint32_t tid, act_str name);

#endif
