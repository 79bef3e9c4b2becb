/*
 * names.c -- kernel names kept for the life of the process.
 *
 * A command carries its kernel's name from the enqueue to the completion
 * callback, which may run after the app released the kernel. Each
 * distinct name is copied here once and never freed, so a command holds a
 * pointer, not a copy (no per-launch copy, a smaller act_cl_op), and the
 * callback interns it by pointer (act_str_intern_stable: no hashing of
 * the bytes per command). Memory: one copy per distinct kernel name.
 * Looked up only when a thread's kernel cache misses (objects.c) or for a
 * kernel whose creation was not seen; a mutex is enough.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cl_source.h"

#define ACT_CL_NAME_BUCKETS 1024u

typedef struct kept_name {
    struct kept_name *next;
    size_t len;
    char s[]; /* NUL-terminated */
} kept_name;

static kept_name *act_cl_names[ACT_CL_NAME_BUCKETS];
static pthread_mutex_t act_cl_names_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t act_cl_names_once = PTHREAD_ONCE_INIT;

/* A child forked while another thread held the lock must not wait for it
 * for ever; the names themselves stay valid in the child. */
static void act_cl_names_atfork_child(void)
{
    pthread_mutex_init(&act_cl_names_lock, NULL);
}

static void act_cl_names_register(void)
{
    pthread_atfork(NULL, NULL, act_cl_names_atfork_child);
}

static uint32_t name_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

const char *act_cl_name_keep(const char *s, size_t len)
{
    kept_name **b = &act_cl_names[name_hash(s, len) % ACT_CL_NAME_BUCKETS];
    pthread_once(&act_cl_names_once, act_cl_names_register);
    pthread_mutex_lock(&act_cl_names_lock);
    kept_name *n = *b;
    while (n && (n->len != len || memcmp(n->s, s, len) != 0))
        n = n->next;
    if (!n && (n = malloc(sizeof *n + len + 1))) {
        n->len = len;
        memcpy(n->s, s, len);
        n->s[len] = '\0';
        n->next = *b;
        *b = n;
    }
    pthread_mutex_unlock(&act_cl_names_lock);
    return n ? n->s : NULL;
}

const char *act_cl_kernel_name(cl_kernel k)
{
    char buf[256];
    size_t len = 0;
    if (act_cl_next.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof buf, buf, &len) ==
        CL_SUCCESS)
        return act_cl_name_keep(buf, strnlen(buf, len < sizeof buf ? len : sizeof buf));
    /* Longer than buf (or the runtime refused): ask for the length. */
    if (act_cl_next.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &len) != CL_SUCCESS ||
        len <= sizeof buf)
        return NULL;
    char *p = malloc(len);
    const char *kept = NULL;
    if (p && act_cl_next.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, p, NULL) == CL_SUCCESS)
        kept = act_cl_name_keep(p, strnlen(p, len));
    free(p);
    return kept;
}
