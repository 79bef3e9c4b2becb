/*
 * sqlite_api.c -- libsqlite3.so.0 loaded with dlopen on first use, its
 * functions resolved once into `sq` (sqlite_api.h says why not linked).
 */
#include "sqlite_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

act_sqlite_api sq;
static int sq_loaded; /* 1: every function resolved; -1: not available */
static pthread_once_t sq_once = PTHREAD_ONCE_INIT;

static void sq_load(void)
{
    void *h = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sq_loaded = -1;
        return;
    }
    int ok = 1;
    void *p;
#define X(ret, name, args)                                                                         \
    p = dlsym(h, #name);                                                                           \
    ok &= p != NULL;                                                                               \
    memcpy(&sq.name, &p, sizeof(p));
    ACT_SQLITE_FNS(X)
#undef X
    sq_loaded = ok ? 1 : -1;
}

int act_sqlite_load(void)
{
    pthread_once(&sq_once, sq_load);
    return sq_loaded == 1 ? 0 : -1;
}
