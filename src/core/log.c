/*
 * log.c -- the library's only way of speaking: one line on stderr,
 * prefixed "acceltrace: ", written with a single write(2) so lines from
 * several threads or processes never interleave. Never on a hot path.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "core/internal.h"

void act_vlog(const char *fmt, va_list ap)
{
    if (act_config_log_level() == ACT_LOG_QUIET) /* ACCELTRACE_LOG=quiet */
        return;
    char buf[2048];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "acceltrace: ");
    int m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
    if (m < 0)
        return;
    n += (size_t)m < sizeof(buf) - n - 1 ? (size_t)m : sizeof(buf) - n - 2;
    if (n == 0 || buf[n - 1] != '\n')
        buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, n);
    (void)w;
}

void act_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    act_vlog(fmt, ap);
    va_end(ap);
}
