/*
 * session.c -- in-process sessions: act_session_begin() / act_session_end()
 * for programs that record without the `acceltrace run` launcher (the C
 * API, the Python package, the torch plugin).
 *
 * A session does what the launcher and start-up do together: a private
 * spool directory (mkdtemp, 0700) unless the caller names one, the same
 * recorder, start-up (act_init: sources and hook groups), the vendor
 * activity sources whose runtimes are loaded (the hook groups' session
 * probes, act_session_probes_run),
 * and at the end
 * the stop handlers (sources drain their device activity), the recorder is
 * sealed and the same exporter as `run` writes the trace. Sessions can
 * follow one another; the recorder starts a new spool generation each time.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acceltrace.h"
#include "api/export.h"
#include "config.h"
#include "core/dist.h"
#include "core/internal.h"
#include "init/hooks.h"
#include "init/init.h"

static struct {
    pthread_mutex_t lock;
    int active;
    int own_dir; /* we made the directory: remove it at the end */
    int atexit_registered;
    char dir[PATH_MAX];
    char spool[PATH_MAX]; /* this session's spool file */
    char trace_name[256];
} session_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Our directory is flat and private: remove its files, then itself. */
static void remove_dir(const char *dir)
{
    int rc = act_dir_remove_flat(dir);
    if (rc < 0)
        act_log("could not remove the session spool directory %s: %s", dir, strerror(-rc));
}

static void session_discard_files(void)
{
    if (session_state.own_dir)
        remove_dir(session_state.dir);
    else if (session_state.spool[0])
        unlink(session_state.spool);
}

/* A program that exits inside a session leaves no files behind. */
static void session_at_exit(void)
{
    pthread_mutex_lock(&session_state.lock);
    if (session_state.active) {
        act_recorder_close();
        session_discard_files();
        session_state.active = 0;
    }
    pthread_mutex_unlock(&session_state.lock);
}

/* Read a field only if the caller's struct is big enough to have it. */
#define OPT_HAS(o, field) ((o)->struct_size >= offsetof(act_options, field) + sizeof((o)->field))

/* The chunk size `run` would use: ACCELTRACE_CHUNK_SIZE when set (checked
 * as run checks it), else the configuration's default (128 KiB). */
static int session_chunk_size(uint32_t *out)
{
    act_config d;
    act_config_defaults(&d);
    *out = d.chunk_size;
    const char *v = getenv("ACCELTRACE_CHUNK_SIZE");
    if (!v || !*v)
        return ACT_OK;
    char err[512];
    uint64_t b;
    if (act_config_check_var("ACCELTRACE_CHUNK_SIZE", v, err, sizeof(err)) != 0 ||
        act_config_parse_size(v, &b) < 0) {
        act_log("%s", err);
        return ACT_E_CONFIG;
    }
    *out = (uint32_t)b;
    return ACT_OK;
}

/* ACCELTRACE_RING for a session (0 = no ring), checked like `run` checks it. */
static int session_ring(uint32_t chunk, uint64_t *out)
{
    *out = 0;
    const char *v = getenv("ACCELTRACE_RING");
    if (!v || !*v)
        return ACT_OK;
    char err[512];
    if (act_config_check_var("ACCELTRACE_RING", v, err, sizeof(err)) != 0 ||
        act_config_parse_size(v, out) < 0) {
        act_log("%s", err);
        return ACT_E_CONFIG;
    }
    if (*out < 2ull * chunk) {
        act_log("Invalid value for ACCELTRACE_RING: '%s'. Allowed: at least twice "
                "ACCELTRACE_CHUNK_SIZE (%u bytes)",
                v, chunk);
        return ACT_E_CONFIG;
    }
    return ACT_OK;
}

static int session_make_dir(const act_options *opts)
{
    if (opts && OPT_HAS(opts, spool_dir) && opts->spool_dir) {
        /* Absolute: a relative one would depend on the working directory
         * of whichever thread or child records next. */
        if (opts->spool_dir[0] != '/' || strlen(opts->spool_dir) >= sizeof(session_state.dir))
            return ACT_E_INVAL;
        snprintf(session_state.dir, sizeof(session_state.dir), "%s", opts->spool_dir);
        session_state.own_dir = 0;
        return ACT_OK;
    }
    act_temp_template(session_state.dir, sizeof(session_state.dir), "acceltrace-session");
    if (!act_dir_make_temp(session_state.dir))
        return ACT_E_IO;
    session_state.own_dir = 1;
    return ACT_OK;
}

static int session_begin_locked(const act_options *opts)
{
    if (opts && opts->struct_size < sizeof(opts->struct_size))
        return ACT_E_INVAL;
    if (session_state.active)
        return ACT_E_STATE;
    /* A launcher (ACCELTRACE_SPOOL_DIR) records this process: it keeps
     * doing so (start it if nothing has yet), the session is refused. */
    const char *launcher = getenv("ACCELTRACE_SPOOL_DIR");
    if (launcher && *launcher) {
        act_init();
        return ACT_E_CONFLICT;
    }
    if (act_capture_attached())
        return ACT_E_CONFLICT;
    uint64_t capacity = 0; /* automatic, as for run (act_recorder_open) */
    if (opts && OPT_HAS(opts, buffer_size) && opts->buffer_size)
        capacity = opts->buffer_size;
    int api = opts && OPT_HAS(opts, capture_api) ? opts->capture_api : 0;
    session_state.trace_name[0] = '\0';
    if (opts && OPT_HAS(opts, trace_name) && opts->trace_name)
        snprintf(session_state.trace_name, sizeof(session_state.trace_name), "%s",
                 opts->trace_name);

    int rc = act_capture_configure(api, "", 0, 0);
    if (rc != ACT_OK)
        return rc;
    if (opts && OPT_HAS(opts, python_backtrace_all) && opts->python_backtrace > 0)
        act_pystack_configure(opts->python_backtrace, opts->python_backtrace_all);
    else
        act_pystack_configure(act_cfg.python_backtrace, act_cfg.python_backtrace_all);
    uint32_t chunk;
    rc = session_chunk_size(&chunk);
    if (rc != ACT_OK)
        return rc;
    uint64_t ring;
    rc = session_ring(chunk, &ring);
    if (rc != ACT_OK)
        return rc;
    act_recorder_set_ring(ring); /* the spool as large as the ring at least: spool_file.c */
    rc = session_make_dir(opts);
    if (rc != ACT_OK)
        return rc;
    rc = act_recorder_open(session_state.dir, capacity, chunk);
    if (rc != ACT_OK) {
        if (session_state.own_dir)
            rmdir(session_state.dir);
        return rc;
    }
    snprintf(session_state.spool, sizeof(session_state.spool), "%s", act_recorder_path());
    act_dist_record(); /* clock anchor, rank */
    /* Start-up with the recorder open runs every stage (sources, hook
     * groups, exit handling); a stage that fails seals the recorder. */
    int irc = act_init();
    /* Start-up may have run before this session (an OpenCL call made with no
     * tool attached); apply the hook groups now so interception goes live.
     * Applying is idempotent. */
    if (act_capture_attached())
        act_hooks_apply_all();
    if (!act_capture_attached()) {
        act_recorder_close();
        if (session_state.own_dir)
            remove_dir(session_state.dir);
        else
            unlink(session_state.spool);
        return irc < 0 && irc != ACT_E_DISABLED ? irc : ACT_E_STATE;
    }
    /* Device activity of every vendor whose runtime the process already
     * uses (probed: a plain OpenCL or CPU program never gets libcupti or
     * libmspti loaded into it). Stopped by act_lifecycle_stop at the end. */
    act_session_probes_run();
    session_state.active = 1;
    if (!session_state.atexit_registered && atexit(session_at_exit) == 0)
        session_state.atexit_registered = 1;
    return ACT_OK;
}

ACT_EXPORT int act_session_begin(const act_options *opts)
{
    pthread_mutex_lock(&session_state.lock);
    int rc = session_begin_locked(opts);
    pthread_mutex_unlock(&session_state.lock);
    return rc;
}

ACT_EXPORT int act_session_end(const char *trace_path)
{
    pthread_mutex_lock(&session_state.lock);
    if (!session_state.active) {
        pthread_mutex_unlock(&session_state.lock);
        return ACT_E_STATE;
    }
    /* Stop handlers drain device activity into the spool, then it is
     * sealed. */
    act_lifecycle_stop();
    act_recorder_close();
    int rc = ACT_OK;
    if (trace_path) {
        act_export_opts eo = {
            .spool_dir = session_state.dir,
            .out_path = trace_path,
            .force = 1,
            /* No trace_name: the program's name, as under run. */
            .trace_name = session_state.trace_name[0] ? session_state.trace_name
                                                      : program_invocation_short_name,
            .child_status = -1,
            .trace_mode = act_cfg.trace_mode,
        };
        rc = act_trace_export(&eo);
    }
    session_discard_files();
    session_state.active = 0;
    pthread_mutex_unlock(&session_state.lock);
    return rc;
}
