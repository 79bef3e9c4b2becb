/*
 * vec.c -- growing arrays (vec.h).
 */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "acceltrace.h"

/* Transparent huge pages for the 2 MiB-aligned interior of a large block.
 * The builder fills arrays of hundreds of MB once, front to back: with 4
 * KiB pages each page's first touch is a fault (a large share of an
 * export's CPU time on a VM, BENCHMARKS.md item 20); with 2 MiB pages there are
 * 512 times fewer. Where THP is off ("never") or unsupported, madvise
 * fails and nothing changes. The advice belongs to the address range: an
 * mmap'd block (glibc's choice for most blocks this large) takes it away
 * when freed, realloc's mremap carries it along, and a range of the heap
 * keeps it, which costs nothing. */
static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    /* The whole pages the block spans, not only its 2 MiB-aligned
     * interior: an mmap'd block is then advised whole and stays one
     * mapping (VMA). Advising the interior split it in three, and the
     * mremap of realloc's next growth, which must find the old block in
     * one mapping, failed (EFAULT): glibc then fell back to a new block,
     * a copy, and the new block's every page faulted in again. The kernel
     * uses huge pages only where a 2 MiB-aligned range fits anyway. */
    const uintptr_t page = 4096;
    if (!p || bytes < ACT_VEC_HUGE_MIN)
        return;
    uintptr_t a = (uintptr_t)p & ~(page - 1);
    uintptr_t e = ((uintptr_t)p + bytes + page - 1) & ~(page - 1);
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

void *act_vec_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    advise_huge(p, bytes);
    return p;
}

int act_vec__reserve(void *arrp, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return ACT_E_NOMEM;
        nc *= 2;
    }
    if (nc > SIZE_MAX / size)
        return ACT_E_NOMEM;
    void *arr;
    memcpy(&arr, arrp, sizeof(arr)); /* any T *: object pointers share one representation */
    void *na = realloc(arr, nc * size);
    if (!na)
        return ACT_E_NOMEM;
    advise_huge(na, nc * size);
    memcpy(arrp, &na, sizeof(na));
    *cap = nc;
    return 0;
}
