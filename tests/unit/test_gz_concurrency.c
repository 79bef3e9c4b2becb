/*
 * test_gz_concurrency.c -- compressors made in several threads at once
 * while ISA-L is loaded for the first time in the process (writers/gz.c,
 * note 1): each gets a working compressor and every member inflates to
 * what went in. CI runs *concurrency* tests under ThreadSanitizer too
 * (the loader's own lock serialises the racing dlopen calls, so the
 * writes of the entry points that race after them are atomic stores).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "gunzip.h"
#include "writers/gz.h"

enum { THREADS = 4, N = 200000 };

static pthread_barrier_t start;

/* Make a compressor (the first in the process for all of them at once),
 * compress N bytes of text, inflate it back; 0 on success. */
static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    char *in = malloc(N), *back = NULL;
    size_t cap = act_gz_bound(N);
    unsigned char *z = malloc(cap);
    uintptr_t bad = !in || !z;
    for (size_t i = 0; !bad && i < N; i++)
        in[i] = (char)("{\"ph\":\"X\",\"ts\":1.5},\n"[i % 22] + (i % 997 == 0 ? id : 0));
    pthread_barrier_wait(&start);
    act_gz *c = bad ? NULL : act_gz_new(1, ACT_GZ_AUTO);
    size_t zn = c ? act_gz_compress(c, in, N, z, cap) : 0;
    size_t got = 0;
    bad = bad || !zn || !(back = gunzip_mem(z, zn, &got, NULL)) || got != N ||
          memcmp(back, in, N) != 0;
    act_gz_free(c);
    free(in);
    free(back);
    free(z);
    return (void *)bad;
}

static void test_first_load_from_threads(void **state)
{
    (void)state;
    pthread_t t[THREADS];
    assert_int_equal(pthread_barrier_init(&start, NULL, THREADS), 0);
    for (uintptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        assert_null(bad);
    }
    pthread_barrier_destroy(&start);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_load_from_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
