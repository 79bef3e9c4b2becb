/*
 * common.h -- what every file of the library may use: compiler helpers,
 * the timeline clock, logging, and removing a spool directory.
 */
#ifndef ACT_COMMON_H
#define ACT_COMMON_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#if defined(__GNUC__)
#define ACT_LIKELY(x)    __builtin_expect(!!(x), 1)
#define ACT_UNLIKELY(x)  __builtin_expect(!!(x), 0)
#define ACT_HIDDEN       __attribute__((visibility("hidden")))
#define ACT_EXPORT       __attribute__((visibility("default")))
#define ACT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ACT_LIKELY(x)   (x)
#define ACT_UNLIKELY(x) (x)
#define ACT_HIDDEN
#define ACT_EXPORT
#define ACT_PRINTF(a, b)
#endif

#define ACT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- clock.c ---------------------------------------------------------- */

/* The timeline clock: CLOCK_MONOTONIC_RAW nanoseconds. */
static inline uint64_t act_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t act_clock_realtime(void);
/* Offset such that monotonic_raw = realtime + offset, with its error bound
 * (half the tightest bracket of several tries). */
int64_t act_clock_realtime_offset(int64_t *error_ns);

/* ---- fsutil.c --------------------------------------------------------- */

/* Remove the files of a flat directory we own, then the directory itself
 * (links are not followed). 0 or -errno. */
int act_dir_remove_flat(const char *dir);
/* mkdtemp, then mode 0700 whatever the umask: `tmpl` or NULL (errno). */
char *act_dir_make_temp(char *tmpl);
/* "$TMPDIR/PREFIX-XXXXXX" (/tmp when TMPDIR is unset or empty) into out,
 * for act_dir_make_temp or mkstemp; returns the folder it names. */
const char *act_temp_template(char *out, size_t cap, const char *prefix);
/* mkdir `dir` with mode 0700 whatever the umask: 0, or -1 with errno
 * (EEXIST when it exists). */
int act_dir_make_private(const char *dir);
/* fchmod(fd, mode): a file we just created gets `mode`, not what the
 * umask left of it. 0 or -errno. */
int act_file_mode_set(int fd, mode_t mode);
/* Around a call of ours that may grow a file past the program's
 * RLIMIT_FSIZE: block SIGXFSZ in this thread, then restore the mask,
 * taking back the SIGXFSZ the call raised when it failed with `err` EFBIG
 * (fsutil.c). errno is kept. */
typedef struct act_xfsz_guard {
    sigset_t old;
    int had; /* this thread had one pending before: ours merged with it */
} act_xfsz_guard;
void act_xfsz_block(act_xfsz_guard *g);
void act_xfsz_restore(act_xfsz_guard *g, int err);

/* ---- outpath.c -------------------------------------------------------- */

/* May a trace be written at `path`? 0, or an ACT_E_* code with one line in
 * `err`: empty name; exists without `force`; with `force`, anything but a
 * regular file (or a link, unless it leads to something else that exists). */
int act_out_path_check(const char *path, int force, char *err, size_t len);
/* Can a file be created beside `path`? Creates and removes a probe file. */
int act_out_dir_probe(const char *path, char *err, size_t len);

/* ---- self_loaded.c ---------------------------------------------------- */

/* Vendor runtimes acceltrace loaded itself (key: the runtime's library
 * variable, e.g. "ACCELTRACE_CUDART_LIB"), not the program: a source must
 * not take them as a sign that the program uses the vendor. */
int act_self_loaded(const char *key);
void act_self_loaded_note(const char *key);

/* ---- log.c ------------------------------------------------------------ */

/* One line on stderr, prefixed "acceltrace: ". Never used on a hot path. */
void act_log(const char *fmt, ...) ACT_PRINTF(1, 2);
void act_vlog(const char *fmt, va_list ap);

#endif
