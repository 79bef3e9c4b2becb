/*
 * spool.h -- the spool reader: turns one <pid>.acts file (format in
 * core/record.h) into validated records, in order, with their interned
 * strings resolved, for the timeline builder. Opening a spool surveys it
 * (threads, counts per kind, first/last time, problems); the records
 * themselves are handed out one at a time by an iterator, never listed.
 *
 * Spool files may come from a process that crashed mid-write, or from a
 * user who hands us any file at all: every size, offset, count and string
 * id is checked against the file before it is used, only the published
 * prefix of each chunk is read, and every problem becomes a line in
 * `errors` (the rest of the spool is still used when possible). A spool
 * that cannot be used at all makes act_spool_open() fail with a one-line
 * reason.
 *
 * A ring spool (record.h R1-R6) is first copied chunk by chunk under the
 * chunks' seqlock, so a live process recycling chunks while it is read
 * never hands the reader a half-rewritten chunk, and checked again until no
 * chunk was recycled since its copy, so the copy is not torn (reader.c,
 * ring_copy); a chunk that stays busy is counted as overwritten.
 */
#ifndef ACT_SPOOL_H
#define ACT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

/* The chunks a spool's header says were handed out, never more than it
 * declares: what a reader reads, and what a kept spool is cut to. */
static inline uint64_t act_spool_chunks_used(const act_spool_header *h)
{
    return h->chunks_used < h->chunk_count ? h->chunks_used : h->chunk_count;
}

/* The bytes of a spool file up to its last used chunk: what a reader maps,
 * and what a kept spool is cut to. */
static inline uint64_t act_spool_used_bytes(const act_spool_header *h)
{
    return (uint64_t)h->header_size + act_spool_chunks_used(h) * h->chunk_size;
}

/* A string that is not NUL-terminated (it points into the mapping). */
typedef struct act_str {
    const char *p;
    uint32_t n;
} act_str;

/* One record in reading order (segments ordered by sequence, records in
 * chunk order within a segment). `r` points at a record whose size has
 * been checked to cover the structure of its kind. */
typedef struct act_sp_rec {
    const act_rec_hdr *r;
    uint32_t serial; /* thread serial of the segment it came from */
    act_str s1;      /* aux string (name / key / label / message) */
    act_str s2;      /* second string: thread name, device vendor,
                        metadata value, device op detail */
} act_sp_rec;

typedef struct act_sp_thread {
    uint32_t serial;
    uint32_t tid; /* OS tid; 0 when no THREAD record was read */
    act_str name;
} act_sp_thread;

#define ACT_SPOOL_MAX_ERRORS 32 /* further problems are only counted */

typedef struct act_spool {
    char *path;
    const unsigned char *map;
    size_t map_len;
    act_spool_header hdr; /* copy of the file's header */
    int sealed;           /* ACT_SPOOL_F_SEALED was set, or ended_by_exec */
    int ended_by_exec;    /* not sealed, but a later image of its pid follows */
    char **argv;          /* from hdr.cmdline; argc entries, malloc'ed */
    int argc;
    struct act_sp_seg *segs; /* segments in reading order (reader.c) */
    size_t n_segs;
    act_sp_thread *threads; /* sorted by serial */
    size_t n_threads;
    uint64_t records[ACT_REC_KIND_MAX]; /* records read per kind */
    uint64_t first_ts, last_ts;         /* timeline ns, 0 = none seen */
    char **errors;                      /* one line each, "path: ..." */
    size_t n_errors;
    uint64_t n_problems;      /* all problems, including those not listed */
    struct act_sp_live *live; /* while read live (reader_live.c); NULL otherwise */
    /* Set with `live` by the live reader, so that the batch reader lets go
     * of it without calling into reader_live.c (which calls it): the
     * mapping's pages were dropped; the live state ends (act_spool_close). */
    void (*live_untouch)(const struct act_spool *sp);
    void (*live_end)(struct act_spool *sp);
    int private_copy;             /* ring spool: `map` is a consistent private copy (reader.c) */
    struct act_sp_settle *settle; /* the final live scan's (act_spool_live_settled) */
} act_spool;

/* Open, map and decode `path`. On success returns 0 (sp->errors may still
 * list problems); on failure returns ACT_E_IO / ACT_E_FORMAT / ACT_E_NOMEM
 * and writes a one-line reason into err. sp must be closed either way. */
int act_spool_open(act_spool *sp, const char *path, char *err, size_t errlen);
/* The same from an open descriptor (not closed; the file may have been
 * unlinked); `path` names it in messages. */
int act_spool_open_fd(act_spool *sp, int fd, const char *path, char *err, size_t errlen);
void act_spool_close(act_spool *sp);

/* Live reading, for a spool its process is still writing (the launcher
 * streams, docs/architecture.md "Streaming"). act_spool_open_live maps the
 * file and checks its header only (ACT_E_IO or ACT_E_FORMAT: not there or
 * its header not written yet, try again; ACT_E_UNSUPPORTED: refused for
 * good, a TSC-clock spool (its times convert only after close) or a ring
 * (ACT_SPOOL_F_RING: chunks are recycled under the reader)).
 * act_spool_live_scan(final) parses what was published since the last
 * scan and takes the segments their threads ended since (record.h S1);
 * act_spool_live_next then hands out records in exactly the order
 * act_spool_open + act_spool_iter give them: ended segments in sequence
 * order, none before every earlier seq is seen ended, those never ended
 * last (at the final scan). Records wait (0) until that is known;
 * with `final` (nobody writes any more) everything published is read and
 * the header is copied again. The survey's counts, threads and problems
 * grow as records are handed out; act_spool_live_end (after the final
 * walk) completes them (first/last time) and frees the live state. */
int act_spool_open_live(act_spool *sp, const char *path, char *err, size_t errlen);
int act_spool_live_scan(act_spool *sp, int final);
int act_spool_live_next(act_spool *sp, act_sp_rec *rec, int final);
void act_spool_live_end(act_spool *sp);
/* Whether the file's header says the spool is sealed now (its process
 * wrote all it will and is ending: ACT_SPOOL_F_SEALED). */
int act_spool_live_sealed(const act_spool *sp);
/* For a final scan made while the process may still be alive (it sealed
 * the spool and is ending; `run` reads it then, api/export.c): 1 once the
 * process is gone when nothing was published after that scan (the header,
 * every chunk that could take records and every segment left open are as
 * it saw them), so the records it gave are all the spool holds; 0 when
 * something was (a thread was writing as the spool was sealed: record.h
 * S1), or no final scan was made: read the spool again. */
int act_spool_live_settled(const act_spool *sp);
/* First and last time read so far (0 = none). */
void act_spool_live_times(const act_spool *sp, uint64_t *first, uint64_t *last);

/* Convert a timestamp of this spool (its header's clock) into
 * CLOCK_MONOTONIC_RAW nanoseconds. 0 stays 0 (unknown). */
uint64_t act_spool_ns(const act_spool *sp, uint64_t ts);

/* The records of an opened spool in reading order, decoded one at a
 * time (the same records, strings and skips as the survey of
 * act_spool_open; problems were reported there). Several iterators may
 * walk one spool; a record and its strings point into the mapping and
 * stay valid until act_spool_close. The pages read are dropped from the
 * mapping as the walk goes (they come back when touched): iterating keeps
 * a few MB of the spool resident, not all of it.
 * act_spool_iter_next: 1 and *rec filled, 0 at the end, ACT_E_NOMEM. */
typedef struct act_spool_iter act_spool_iter;
act_spool_iter *act_spool_iter_new(const act_spool *sp); /* NULL: out of memory */
int act_spool_iter_next(act_spool_iter *it, act_sp_rec *rec);
void act_spool_iter_free(act_spool_iter *it);
/* String `id` of thread `serial` as it stands at the iterator's record
 * (for records that carry more string ids than s1 and s2: a ring spool's
 * THREAD records, record.h R4). */
act_str act_spool_iter_str(act_spool_iter *it, uint32_t serial, uint32_t id);

/* Drop the pages of the mapping that are resident: for a user that reads
 * records again through pointers it kept (they stay valid; what it reads
 * next comes back from the page cache). Keeps the spool from becoming
 * resident whole while such a user walks it. */
void act_spool_drop_pages(const act_spool *sp);
/* A live spool's bytes [p, p + len) were read again (a record written
 * long after it was read): counted towards its next drop (reader.c); a
 * spool not read live counts its reads itself. */
void act_spool_touch(const act_spool *sp, const void *p, size_t len);
/* How many times this process dropped a spool's pages (any spool). */
uint64_t act_spool_drop_count(void);

/* Thread of a serial (NULL when unknown). */
const act_sp_thread *act_spool_thread(const act_spool *sp, uint32_t serial);

/* An image that called exec never seals its spool: among spools listed
 * by act_spool_dir_list (in that order), one followed by a later image of
 * the same pid (<pid>-N.acts) that started after its last record ended
 * in exec; it is marked sealed (and ended_by_exec). */
void act_spool_link_execs(act_spool **sps, size_t n);

/* List the spool files in `dir` (<pid>.acts, and <pid>-N.acts for the
 * images after an exec), sorted by pid, then image; *paths is a
 * malloc'ed array of malloc'ed strings. Returns 0 or ACT_E_IO /
 * ACT_E_NOMEM (err says why). */
int act_spool_dir_list(const char *dir, char ***paths, size_t *n, char *err, size_t errlen);
void act_spool_dir_free(char **paths, size_t n);

/* Cut each sealed spool in `dir` (not a ring's) to the chunks it used: a
 * spool file is made as large as its capacity (up to 4 GiB by default,
 * sparse) and a kept one would otherwise be that large to a copy that is
 * not sparse-aware. Only for spools whose process has ended (sealed: it
 * writes no new chunk); record.h's header invariant allows it. Returns
 * how many were cut, or ACT_E_IO / ACT_E_NOMEM (err says why). */
int act_spool_dir_shrink(const char *dir, char *err, size_t errlen);

#endif
