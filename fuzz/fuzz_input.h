/*
 * fuzz_input.h -- shared by the libFuzzer targets in fuzz/: hands the
 * fuzzer's bytes to code that reads files by path, through an anonymous
 * in-memory file (memfd) named as /proc/self/fd/N. Header-only.
 */
#ifndef ACT_FUZZ_INPUT_H
#define ACT_FUZZ_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Returns the fd (close it afterwards) and writes its path into `path`. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
