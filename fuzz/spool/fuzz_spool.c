/*
 * fuzz_spool.c -- libFuzzer target: any bytes as a spool file. The spool
 * reader must accept or refuse them (one-line reason) without a crash,
 * leak or sanitizer report; what it accepts goes through the timeline
 * builder and the Chrome writer, as `acceltrace run` would.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../fuzz_input.h"
#include "acceltrace.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"
#include "writers/chrome_json.h"
#include "writers/obuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[512];
    fuzz_file(data, size, path, sizeof(path));
    act_spool sp;
    memset(&sp, 0, sizeof(sp));
    int rc = act_spool_open(&sp, path, err, sizeof(err));
    if (rc) {
        /* A refusal is one line. */
        if (!err[0] || strchr(err, '\n'))
            abort();
        act_spool_close(&sp);
        return 0;
    }
    act_spool *list[1] = {&sp};
    act_timeline tl;
    act_build_opts bo = {0, 0};
    if (act_timeline_build(&tl, list, 1, &bo) == 0) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        act_obuf b;
        if (null >= 0 && act_obuf_init(&b, null, 1u << 16) == 0) {
            act_chrome_opts co = {0};
            co.child_status = -1;
            act_chrome_write(&tl, &co, &b);
            act_obuf_flush(&b);
            act_obuf_free(&b);
        }
        if (null >= 0)
            close(null);
    }
    act_timeline_free(&tl);
    act_spool_close(&sp);
    return 0;
}
