/*
 * run_args.h -- `acceltrace run`'s command line: its options, parsed
 * into run_opts (the rest of run's configuration is in ACCELTRACE_*
 * variables, set here for the program's environment).
 */
#ifndef ACT_RUN_ARGS_H
#define ACT_RUN_ARGS_H

typedef struct run_opts {
    const char *out;
    int force;
    int summary;
    int by_range;
    int preload;
    int keep_spool;
    int cuda;            /* --cuda: CUDA_INJECTION64_PATH (the driver starts the CUPTI source) */
    int ascend;          /* --ascend: preload libmspti + libacceltrace, ACCELTRACE_SOURCES=ascend */
    int trigger_capture; /* --capture-range=trigger: triggers open and close the window */
    int no_stream;       /* --no-stream: read the spool only after the program exits */
    unsigned stream_ms;  /* --stream-interval: between two reads of the spool (0: default) */
    int torch_off;       /* --torch=off: no start-up hook for Python programs (torch ops) */
    const char *metadata[256];
    int n_metadata;
} run_opts;

/* Parse run's options (getopt, stopping at the program): 0 with
 * argv[*prog_index] the program, or -1 with the error said (usage). An
 * option that is only a variable (--ring, --hooks, ...) is set in the
 * environment here; --capture-range=trigger is taken for the launcher. */
int act_run_args_parse(int argc, char **argv, run_opts *o, int *prog_index);

#endif
