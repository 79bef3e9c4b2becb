/*
 * fuzz_spool.c -- libFuzzer target: any bytes as a spool file. The spool
 * reader must accept or refuse them (one-line reason) without a crash,
 * leak or sanitizer report; what it accepts goes through the timeline
 * builder and the Chrome writer, as `acceltrace run` would.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fuzz_input.h"
#include "acceltrace.h"
#include "timeline/spool.h"
#include "timeline/timeline.h"
#include "writers/chrome_json.h"

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
    act_tl_build *bs = NULL;
    if (act_timeline_build_start(&tl, list, 1, &bo, &bs) == 0) {
        /* The export's path: events streamed to the writer in batches. */
        act_chrome_opts co = {0};
        co.child_status = -1;
        act_chrome_stream *cs;
        if (act_chrome_stream_open_mem(&cs, &tl, &co) == 0) {
            tl.sink = act_chrome_stream_sink;
            tl.sink_ctx = cs;
            act_timeline_build_events(bs);
        }
        char *text = NULL;
        size_t len;
        act_chrome_stream_close_mem(cs, &text, &len);
        free(text);
    }
    act_timeline_build_finish(bs);
    act_timeline_free(&tl);
    act_spool_close(&sp);
    return 0;
}
