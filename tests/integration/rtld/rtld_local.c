/*
 * rtld_local.c -- a program that does not link libOpenCL and reaches it
 * only through a library it dlopen()s with RTLD_LOCAL (argv[1], the
 * path of libit_cl_work.so), as Python does with every extension module.
 * Under --preload the shim's exported cl* symbols take the library's
 * calls; the shim must still find the real entry points (issue 21.2,
 * issue 16 section 1). Prints the library's result; exits 0.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rtld_local LIB\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "rtld_local: %s\n", dlerror());
        return 2;
    }
    long (*work)(int) = (long (*)(int))dlsym(lib, "it_cl_work");
    if (!work) {
        fprintf(stderr, "rtld_local: %s\n", dlerror());
        return 2;
    }
    printf("rtld_local: sum %ld\n", work(5));
    return 0;
}
