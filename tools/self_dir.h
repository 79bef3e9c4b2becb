/*
 * self_dir.h -- where this command lives (self_dir.c).
 */
#ifndef ACT_SELF_DIR_H
#define ACT_SELF_DIR_H

#include <stddef.h>

/* The folder of this executable into buf: 0, or -1 (/proc not readable). */
int act_self_dir(char *buf, size_t len);

#endif
