/*
 * summary_rows.h -- what the summary's printers share (summary_rows.c):
 * names made safe and short for a terminal, figures in the chosen unit,
 * a section's top rows with one counted "other" row, and the processes or
 * ranks of the per-process rows. Internal to the summary's printers.
 */
#ifndef ACT_SUMMARY_ROWS_H
#define ACT_SUMMARY_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "summary.h"
#include "summary_impl.h"

/* What a figure beyond a double is printed as (table, CSV, JSON). */
#define FIG_OVERFLOW "overflow"

typedef struct prow {
    uint32_t id; /* name id, UINT32_MAX = "(no range)" or "other" */
    const char *full;
    uint64_t count;
    double total, self, min, max;
    char *shown;
    size_t shown_cap;
} prow;

/* A section: its top rows by total (at most `cap`, sorted) and one "other"
 * row summing the rest, so that printing holds no more than `cap` rows
 * whatever the number of names; its count and times are exact. */
typedef struct sect {
    prow *rows;
    size_t nr, cap;
    uint64_t names;       /* distinct names in the section */
    uint64_t other_names; /* of which summed in `other` */
    prow other;
    char other_label[64];
} sect;

typedef struct pgroup {
    uint32_t idx;   /* its act_sum_group, or its source when per source */
    uint32_t other; /* >0: the row summing this many left-out rows */
    long long rank; /* distributedInfo.rank of its trace; -1 = none */
    uint64_t pid;   /* one trace: its process */
    uint64_t dev_slices, host_slices;
    double dev_busy, dev_total, host_busy, first, last;
} pgroup;

const char *act_sum_base_of(const char *p);
double act_sum_busy_of(const act_summary *s, int device, size_t *lanes);
size_t act_sum_clean(const char *name, size_t len, char *out, size_t cap);
size_t act_sum_cols_of(const char *s);
const char *act_sum_fig(act_summary *s, char *b, size_t cap, double v, int prec);
int act_sum_fig_text(char *b, size_t cap, double v, int prec);
const char *act_sum_tfig(act_summary *s, char *b, size_t cap, double v, int prec);
void act_sum_digits_group(char *b, size_t cap);
void act_sum_wrap(FILE *f, const char *line, int indent, int list);
void act_sum_fit(char *s, size_t w);
void act_sum_free_shown(prow *r, size_t n);
void act_sum_group_label(const act_summary *s, const pgroup *g, char *out, size_t cap);
size_t act_sum_groups_cap(pgroup *g, size_t n, size_t cap);
size_t act_sum_groups_of(const act_summary *s, pgroup *out);
double act_sum_pct_of(double part, double busy);
void act_sum_range_sect(act_summary *s, sect *t);
/* Device ops' launch-to-start delay (queued to start), per name. */
void act_sum_delay_sect(act_summary *s, sect *t);
void act_sum_sect_begin(sect *t, prow *rows, size_t cap);
void act_sum_sect_of(act_summary *s, int device, sect *t);
int act_sum_show_names(prow *r, size_t n, int names, size_t w);
double act_sum_span_of(const pgroup *g);

#endif
