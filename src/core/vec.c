/*
 * vec.c -- growing arrays (vec.h).
 */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acceltrace.h"

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
    memcpy(arrp, &na, sizeof(na));
    *cap = nc;
    return 0;
}
