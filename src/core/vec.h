/*
 * vec.h -- growing arrays: the one helper for "room for n elements".
 *
 *     if (act_vec_reserve(p->ranges, p->cap_ranges, p->n_ranges + 1, 256))
 *         return ACT_E_NOMEM;
 *
 * `arr` is any T *array and `cap` a size_t lvalue holding its capacity in
 * elements. The capacity doubles (from `first` when the array is empty)
 * until it holds `need`; on failure the array and its capacity are left as
 * they were. The test for room is inline: it runs once per record. `need`
 * is evaluated once or twice, so it must have no side effects.
 *
 * Arrays of ACT_VEC_HUGE_MIN bytes or more, grown here or allocated with
 * act_vec_alloc, are backed by transparent huge pages where the system
 * allows it (vec.c says why).
 */
#ifndef ACT_VEC_H
#define ACT_VEC_H

#include <stddef.h>

/* Returns 0, or ACT_E_NOMEM. */
#define act_vec_reserve(arr, cap, need, first)                                                     \
    ((size_t)(need) <= (cap)                                                                       \
         ? 0                                                                                       \
         : act_vec__reserve((void *)&(arr), &(cap), (need), sizeof(*(arr)), (first)))

#define ACT_VEC_HUGE_MIN ((size_t)8 << 20)

/* malloc for a block that may be large (its contents are undefined). */
void *act_vec_alloc(size_t bytes);
int act_vec__reserve(void *arrp, size_t *cap, size_t need, size_t size, size_t first);

#endif
