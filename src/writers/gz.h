/*
 * gz.h -- one gzip member (RFC 1952) from one buffer: the compressor behind
 * the writers' gzip output (obuf.c), with two engines.
 *
 *   ISA-L's igzip (Intel's Intelligent Storage Acceleration Library), the
 *   fastest deflate there is on x86 and Arm, several times libdeflate's
 *   level 1 at the same ratio (BENCHMARKS.md, gzip). It is not linked: libisal.so.2 is loaded
 *   with dlopen the first time a gzip trace is written, so a traced program
 *   that writes none never maps it, and the library needs nothing new at
 *   load (the wheel's NEEDED entries, tests/package).
 *
 *   libdeflate (linked in statically), where libisal.so.2 is not installed,
 *   for levels above ISA-L's 3, and for any buffer ISA-L cannot take (it
 *   never happens within act_gz_bound; the fallback keeps it that way).
 *
 * Either engine's members are ordinary gzip: zlib, Python's gzip module,
 * Perfetto, HTA and the TensorBoard plugin read a file of them. One
 * act_gz is used by one thread at a time.
 */
#ifndef ACT_GZ_H
#define ACT_GZ_H

#include <stddef.h>

typedef struct act_gz act_gz;

typedef enum act_gz_engine {
    ACT_GZ_AUTO,       /* ISA-L where it is installed and the level allows */
    ACT_GZ_ISAL,       /* ISA-L or nothing (tests) */
    ACT_GZ_LIBDEFLATE, /* libdeflate */
} act_gz_engine;

/* A compressor at `level` (1..12; ISA-L takes 1..3, libdeflate the rest).
 * NULL: out of memory, or ACT_GZ_ISAL asked where ISA-L is not there. */
act_gz *act_gz_new(int level, act_gz_engine engine);
/* The engine a compressor uses (ACT_GZ_ISAL or ACT_GZ_LIBDEFLATE). */
act_gz_engine act_gz_engine_of(const act_gz *c);
/* Whether ISA-L can be loaded here (loads it once). */
int act_gz_isal_available(void);
/* The most bytes a member of n input bytes takes. */
size_t act_gz_bound(size_t n);
/* Compress in[0..n) into out[0..cap) as one gzip member; its size, or 0
 * if it does not fit (never with cap >= act_gz_bound(n)) or memory ran out. */
size_t act_gz_compress(act_gz *c, const void *in, size_t n, void *out, size_t cap);
/* Buffers an ISA-L compressor handed to libdeflate (tests: none within
 * the bound). */
unsigned act_gz_fallbacks(const act_gz *c);
void act_gz_free(act_gz *c);

#endif
