/*
 * prog_two_copies.c -- loads two copies of libacceltrace (argv[1],
 * argv[2]) into one process and starts both; prints the result of each
 * copy's first annotation ("rc1 rc2"). argv[3]: "seq" (copy 1 first),
 * "rev" (copy 2 first) or "threads" (both at once). With `-` as argv[1]
 * the first copy is the one already loaded (LD_PRELOAD).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef int (*push_fn)(const char *);
static push_fn push[2];
static int rc[2];

static void *start(void *arg)
{
    int i = (int)(long)arg;
    rc[i] = push[i]("step");
    return NULL;
}

static push_fn load(const char *path)
{
    if (!strcmp(path, "-"))
        return (push_fn)dlsym(RTLD_DEFAULT, "act_range_push");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return NULL;
    }
    return (push_fn)dlsym(h, "act_range_push");
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    push[0] = load(argv[1]);
    push[1] = load(argv[2]);
    if (!push[0] || !push[1] || push[0] == push[1])
        return 3;
    if (!strcmp(argv[3], "threads")) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, start, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    } else if (!strcmp(argv[3], "rev")) {
        start((void *)1L);
        start((void *)0L);
    } else {
        start((void *)0L);
        start((void *)1L);
    }
    printf("%d %d\n", rc[0], rc[1]);
    return 0;
}
