/*
 * gunzip.h -- the tests' reading of gzip output: a whole series of gzip
 * members (RFC 1952 2.2), as the writers produce, inflated with zlib. No
 * cmocka assertion inside, so that threads may call it; the caller
 * asserts on the result.
 */
#ifndef ACT_TEST_GUNZIP_H
#define ACT_TEST_GUNZIP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Inflate in[0..n), every member, into a malloc'd buffer (its size in
 * *len, the members in *members when not NULL). NULL for no member, a
 * corrupt member, one cut short, or no memory. */
static inline char *gunzip_mem(const void *in, size_t n, size_t *len, int *members)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return NULL;
    size_t cap = 4 * n + 65536, used = 0;
    char *out = malloc(cap);
    int m = 0, ended = 1;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    while (out && (z.avail_in || !ended)) {
        if (cap - used < 65536) {
            char *o = realloc(out, cap *= 2);
            if (!o) {
                free(out);
                out = NULL;
                break;
            }
            out = o;
        }
        z.next_out = (Bytef *)out + used;
        z.avail_out = (uInt)(cap - used);
        int r = inflate(&z, Z_NO_FLUSH);
        used = cap - z.avail_out;
        if (r == Z_STREAM_END) {
            m++;
            ended = 1;
            if (inflateReset(&z) == Z_OK)
                continue;
        } else if (r == Z_OK) {
            ended = 0;
            continue;
        }
        free(out); /* corrupt, cut short (no progress), or reset failed */
        out = NULL;
    }
    inflateEnd(&z);
    if (out && !m) {
        free(out);
        out = NULL;
    }
    if (out) {
        *len = used;
        if (members)
            *members = m;
    }
    return out;
}

#endif
