/*
 * fuzz_input.h -- shared by the libFuzzer targets in fuzz/: hands the
 * fuzzer's bytes to code that reads files by path. The readers open with
 * O_NOFOLLOW, so the bytes go to a real file (one per fuzzing process, in a
 * private directory under /dev/shm or $TMPDIR, rewritten for each input)
 * rather than a /proc/self/fd link. Header-only.
 */
#ifndef ACT_FUZZ_INPUT_H
#define ACT_FUZZ_INPUT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir[256];

static void fuzz_cleanup(void)
{
    char p[300];
    snprintf(p, sizeof(p), "%s/input", fuzz_dir);
    unlink(p);
    rmdir(fuzz_dir);
}

/* Writes the input; `path` receives its name. Returns 0 (aborts on error:
 * the harness is broken, not the code under test). */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    if (!fuzz_dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/act-fuzz-XXXXXX", base ? base : "/tmp");
        if (!mkdtemp(fuzz_dir))
            abort();
        atexit(fuzz_cleanup);
    }
    snprintf(path, len, "%s/input", fuzz_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    close(fd);
    return 0;
}

#endif
