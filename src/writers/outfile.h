/*
 * outfile.h -- an output file's life, shared by every writer (writer.h):
 * the file is written under a temporary name beside its path and put in
 * place only once complete, so that a reader never sees half a trace and
 * a failed export leaves nothing behind. What it decides: the temporary
 * file (unnamed with O_TMPFILE where the file system allows, else
 * ".BASE.XXXXXXXX.tmp"), its mode (0600 unless asked, set on the
 * descriptor), --force (an existing path is kept unless force; force
 * replaces regular files only, checked at the open and again at the
 * close), the replaced file held open for the caller to free later, and
 * the removal of the temporary file on failure.
 */
#ifndef ACT_OUTFILE_H
#define ACT_OUTFILE_H

#include <stddef.h>

typedef struct act_outfile act_outfile;

/* The temporary file has a name from the start (a writer that reopens it
 * by path, as SQLite does); else it may stay unnamed until the close. */
#define ACT_OUTFILE_NAMED 1

/* Create the temporary file for `path` (mode: permission bits, 0 = 0600;
 * flags: ACT_OUTFILE_*). Returns 0, ACT_E_IO or ACT_E_NOMEM with a
 * one-line reason in err; *f is NULL on failure. */
int act_outfile_open(act_outfile **f, const char *path, int force, unsigned mode, int flags,
                     char *err, size_t errlen);
/* The descriptor to write to (O_WRONLY, close-on-exec; the outfile closes it). */
int act_outfile_fd(const act_outfile *f);
/* The final path, and the temporary file's name ("" while it is unnamed). */
const char *act_outfile_path(const act_outfile *f);
const char *act_outfile_temp(const act_outfile *f);
/* With force, the file _close replaces is not freed by the replace: it is
 * left open in *fd (-1 when nothing was replaced or the close failed), and
 * closing it frees it. Freeing a trace of some MB takes milliseconds,
 * which `run` spends after it returned. *fd is -1 from this call on. */
void act_outfile_keep_replaced(act_outfile *f, int *fd);
/* End the file's life and free f. `ok`: put it in place (0: discard it,
 * the result is ACT_E_INVAL). `rc`: the writer's result so far (0 when
 * every byte reached the descriptor; `sys_errno` says why for ACT_E_IO):
 * not 0, the file is removed and err says why. Returns 0 or the first
 * error (ACT_E_IO, ACT_E_NOMEM, ACT_E_INVAL), with a one-line reason in err
 * when ok, or when !ok with a non-zero `sys_errno`: a writer that gave up
 * because a write failed says why (ENOSPC, EFBIG). */
int act_outfile_close(act_outfile *f, int ok, int rc, int sys_errno, char *err, size_t errlen);

#endif
