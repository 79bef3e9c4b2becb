/*
 * spool_walk.h -- a deliberately small, independent spool walker for the
 * recorder's tests: it checks the file format from record.h without using
 * the timeline reader, so a bug shared by writer and reader cannot hide.
 */
#ifndef ACT_TEST_SPOOL_WALK_H
#define ACT_TEST_SPOOL_WALK_H

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/record.h"

typedef struct walk_stats {
    uint64_t by_kind[ACT_REC_KIND_MAX];
    uint64_t torn; /* records with impossible sizes or kinds */
    uint64_t segments;
    uint64_t chunks;
    const act_spool_header *hdr;
    void *map;
    size_t size;
} walk_stats;

typedef struct walk_seg {
    uint64_t seq;
    const char *p, *end;
} walk_seg;

static int walk_seg_cmp(const void *a, const void *b)
{
    const walk_seg *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Calls fn(rec, serial, arg) for every published record, segments in
 * their global order (as a reader must: chunks are recycled). Returns 0 on
 * a well-formed file. */
static int spool_walk(const char *path, walk_stats *ws,
                      void (*fn)(const act_rec_hdr *, uint32_t serial, void *), void *arg)
{
    memset(ws, 0, sizeof(*ws));
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    struct stat st;
    fstat(fd, &st);
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    ws->map = m;
    ws->size = (size_t)st.st_size;
    const act_spool_header *h = m;
    ws->hdr = h;
    if (h->magic != ACT_SPOOL_MAGIC || h->version != ACT_SPOOL_VERSION)
        return -1;
    uint64_t used = h->chunks_used < h->chunk_count ? h->chunks_used : h->chunk_count;
    size_t nseg = 0, capseg = 1024;
    walk_seg *segs = malloc(capseg * sizeof(*segs));
    for (uint64_t i = 0; i < used; i++) {
        const char *c = (const char *)m + ACT_SPOOL_HEADER_SIZE + i * h->chunk_size;
        const act_chunk_header *ch = (const act_chunk_header *)c;
        if (ch->magic != ACT_CHUNK_MAGIC)
            continue;
        ws->chunks++;
        uint32_t fill = atomic_load((_Atomic uint32_t *)&ch->used);
        const char *p = c + sizeof(*ch), *end = p + fill;
        while (p < end) {
            const act_rec_hdr *r = (const act_rec_hdr *)p;
            size_t sz = (size_t)r->size8 * 8;
            if (sz < 8 || p + sz > end || r->kind >= ACT_REC_KIND_MAX) {
                ws->torn++;
                break;
            }
            if (r->kind == ACT_REC_SEGMENT) {
                if (nseg == capseg)
                    segs = realloc(segs, (capseg *= 2) * sizeof(*segs));
                if (nseg)
                    segs[nseg - 1].end = segs[nseg - 1].end ? segs[nseg - 1].end : p;
                segs[nseg++] = (walk_seg){((const act_rec_segment *)r)->seq, p, NULL};
            }
            p += sz;
        }
        if (nseg && !segs[nseg - 1].end)
            segs[nseg - 1].end = p;
    }
    qsort(segs, nseg, sizeof(*segs), walk_seg_cmp);
    for (size_t s = 0; s < nseg; s++) {
        uint32_t serial = ((const act_rec_hdr *)segs[s].p)->aux;
        ws->segments++;
        for (const char *p = segs[s].p; p < segs[s].end;) {
            const act_rec_hdr *r = (const act_rec_hdr *)p;
            ws->by_kind[r->kind]++;
            if (fn)
                fn(r, serial, arg);
            p += (size_t)r->size8 * 8;
        }
    }
    free(segs);
    return 0;
}

static void spool_unwalk(walk_stats *ws)
{
    if (ws->map)
        munmap(ws->map, ws->size);
}

#endif
