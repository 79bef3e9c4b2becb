/*
 * tmpdir.h -- a private temporary directory for a unit test's spools, made
 * with mkdtemp and removed with the library's own act_dir_remove_flat (the
 * one `acceltrace run` and sessions use): spool directories hold files only,
 * so a leftover subdirectory is a leak, and the test aborts on it (cmocka
 * does not fail a run whose group teardown failed).
 */
#ifndef ACT_TEST_TMPDIR_H
#define ACT_TEST_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* dir receives "/tmp/act-TAG-XXXXXX" made unique; aborts when it cannot. */
static inline void tmpdir_make(char *dir, size_t len, const char *tag)
{
    snprintf(dir, len, "/tmp/act-%s-XXXXXX", tag);
    if (!mkdtemp(dir))
        abort();
}

/* Remove dir and the files in it; returns 0, aborts when it cannot. */
static inline int tmpdir_remove(const char *dir)
{
    int rc = act_dir_remove_flat(dir);
    if (rc != 0) {
        fprintf(stderr, "tmpdir: cannot remove %s: %s\n", dir, strerror(-rc));
        abort();
    }
    return 0;
}

#endif
