/*
 * rec_read.h -- the live recorder as its readers see it: the in-process
 * snapshot of the spool (src/timeline/snapshot.c) and tests. Spool files
 * themselves are read with src/timeline/spool.h.
 */
#ifndef ACT_REC_READ_H
#define ACT_REC_READ_H

#include <stdint.h>

#include "core/rec_write.h"

/* Path of this process' spool file ("" when none). */
const char *act_recorder_path(void);
/* Chunks [0, n) of the open spool are populated by the pre-fault helper
 * (its window grows with the chunks in use; tests check the policy). */
uint32_t act_recorder_prefaulted(void);

#endif
