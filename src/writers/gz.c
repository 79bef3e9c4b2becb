/*
 * gz.c -- one gzip member from one buffer, with ISA-L (loaded on first use)
 * or libdeflate (see gz.h).
 *
 * Design notes:
 *  1. ISA-L is resolved once per process: dlopen("libisal.so.2") and two
 *     symbols. The result is published with a release store after the
 *     pointers (atomic stores); two threads that race both resolve the
 *     same pointers (a second dlopen only counts a reference), and no
 *     thread ever waits (a pthread_once would leave a child forked mid-way
 *     waiting forever). Each compressor keeps its own copy of them.
 *  2. The layout of struct isal_zstream is the header's, for the soname
 *     2 that is loaded: the build needs ISA-L's header, not its library
 *     (without the header, ACT_HAVE_ISAL unset, libdeflate does all).
 *  3. act_gz_bound covers both engines, so that a buffer ISA-L refuses
 *     (it cannot happen within the bound) still fits libdeflate's output.
 */
#include "gz.h"

#include <dlfcn.h>
#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

/* ACT_HAVE_ISAL: the build found ISA-L's header (CMakeLists.txt); without
 * it, every compressor is libdeflate's. */
#ifdef ACT_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#else
#define ISAL_DEF_MAX_HDR_SIZE 328 /* igzip_lib.h's, for act_gz_bound */
#endif

#define ISAL_SONAME    "libisal.so.2"
#define ISAL_MAX_LEVEL 3

struct isal_zstream;

typedef struct isal_api {
    void (*stateless_init)(struct isal_zstream *);
    int (*stateless)(struct isal_zstream *);
} isal_api;

#ifdef ACT_HAVE_ISAL
/* dlsym's results, published by isal_state (note 1): atomic stores, so
 * that two first loads racing write them without a data race */
static void *isal_sym_init, *isal_sym_run;
static int isal_state; /* 0: not tried; 1: loaded; -1: not there */

/* Load ISA-L once; 1 and its entry points in *api, or 0. */
static int isal_load(isal_api *api)
{
    int st = __atomic_load_n(&isal_state, __ATOMIC_ACQUIRE);
    if (!st) {
        void *h = dlopen(ISAL_SONAME, RTLD_NOW | RTLD_LOCAL);
        void *init = h ? dlsym(h, "isal_deflate_stateless_init") : NULL;
        void *run = h ? dlsym(h, "isal_deflate_stateless") : NULL;
        if (init && run) {
            __atomic_store_n(&isal_sym_init, init, __ATOMIC_RELAXED);
            __atomic_store_n(&isal_sym_run, run, __ATOMIC_RELAXED);
            st = 1;
        } else {
            if (h)
                dlclose(h);
            st = -1;
        }
        __atomic_store_n(&isal_state, st, __ATOMIC_RELEASE);
    }
    if (st < 0)
        return 0;
    if (api) {
        /* POSIX: a data pointer from dlsym converts to a function pointer */
        void *init = __atomic_load_n(&isal_sym_init, __ATOMIC_RELAXED);
        void *run = __atomic_load_n(&isal_sym_run, __ATOMIC_RELAXED);
        memcpy(&api->stateless_init, &init, sizeof(init));
        memcpy(&api->stateless, &run, sizeof(run));
    }
    return 1;
}
#else
static int isal_load(isal_api *api)
{
    (void)api;
    return 0;
}
#endif

int act_gz_isal_available(void)
{
    return isal_load(NULL);
}

struct act_gz {
    int level;
    act_gz_engine engine;
    isal_api isal;           /* ISA-L's entry points */
    unsigned char *isal_buf; /* ISA-L's level buffer */
    size_t isal_buf_size;
    struct libdeflate_compressor *ld; /* libdeflate, or ISA-L's fallback (made when needed) */
    unsigned fallbacks;               /* buffers ISA-L did not take */
};

static size_t isal_level_buf_size(int level)
{
#ifdef ACT_HAVE_ISAL
    switch (level) {
    case 1: return ISAL_DEF_LVL1_DEFAULT;
    case 2: return ISAL_DEF_LVL2_DEFAULT;
    case 3: return ISAL_DEF_LVL3_DEFAULT;
    default: return 0;
    }
#else
    (void)level;
    return 0;
#endif
}

act_gz *act_gz_new(int level, act_gz_engine engine)
{
    if (level < 1 || level > 12)
        return NULL;
    isal_api api = {NULL, NULL};
    int use_isal = engine != ACT_GZ_LIBDEFLATE && level <= ISAL_MAX_LEVEL && isal_load(&api);
    if (engine == ACT_GZ_ISAL && !use_isal)
        return NULL;
    act_gz *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->level = level;
    c->engine = use_isal ? ACT_GZ_ISAL : ACT_GZ_LIBDEFLATE;
    if (use_isal) {
        c->isal = api;
        c->isal_buf_size = isal_level_buf_size(level);
        c->isal_buf = malloc(c->isal_buf_size);
    } else {
        c->ld = libdeflate_alloc_compressor(level);
    }
    if (!c->isal_buf && !c->ld) {
        free(c);
        return NULL;
    }
    return c;
}

act_gz_engine act_gz_engine_of(const act_gz *c)
{
    return c->engine;
}

size_t act_gz_bound(size_t n)
{
    /* ISA-L: stored blocks of at most 64 KiB (5 bytes each), its largest
     * block header, the gzip header and trailer; libdeflate's own bound */
    size_t isal_bound = n + 5 * (n / 0xffff + 1) + ISAL_DEF_MAX_HDR_SIZE + 64;
    size_t ld_bound = libdeflate_gzip_compress_bound(NULL, n);
    return isal_bound > ld_bound ? isal_bound : ld_bound;
}

static size_t isal_compress(act_gz *c, const void *in, size_t n, void *out, size_t cap)
{
#ifndef ACT_HAVE_ISAL
    (void)c, (void)in, (void)n, (void)out, (void)cap;
    return 0;
#else
    if (n > UINT32_MAX || cap > UINT32_MAX)
        return 0; /* avail_in / avail_out are 32-bit: libdeflate takes it */
    struct isal_zstream s;
    c->isal.stateless_init(&s);
    s.level = (uint32_t)c->level;
    s.level_buf = c->isal_buf;
    s.level_buf_size = (uint32_t)c->isal_buf_size;
    s.gzip_flag = IGZIP_GZIP;
    s.end_of_stream = 1;
    s.flush = NO_FLUSH;
    s.next_in = (uint8_t *)(uintptr_t)in;
    s.avail_in = (uint32_t)n;
    s.next_out = out;
    s.avail_out = (uint32_t)cap;
    if (c->isal.stateless(&s) != COMP_OK || s.avail_in)
        return 0;
    return s.total_out;
#endif
}

size_t act_gz_compress(act_gz *c, const void *in, size_t n, void *out, size_t cap)
{
    if (c->engine == ACT_GZ_ISAL) {
        size_t z = isal_compress(c, in, n, out, cap);
        if (z)
            return z;
        c->fallbacks++;
        if (!c->ld)
            c->ld = libdeflate_alloc_compressor(c->level);
        if (!c->ld)
            return 0;
    }
    return libdeflate_gzip_compress(c->ld, in, n, out, cap);
}

unsigned act_gz_fallbacks(const act_gz *c)
{
    return c->fallbacks;
}

void act_gz_free(act_gz *c)
{
    if (!c)
        return;
    free(c->isal_buf);
    libdeflate_free_compressor(c->ld);
    free(c);
}
