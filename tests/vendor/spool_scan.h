/*
 * spool_scan.h -- a small, independent reader of one spool file for the
 * vendor-source tests: it checks what the sources wrote at the record
 * level (record.h), without the timeline builder. Strings are resolved
 * per thread serial; range pushes are numbered per thread exactly as the
 * recorder numbers them, so an `ext` value can be turned back into the
 * name of the range it designates.
 */
#ifndef SPOOL_SCAN_H
#define SPOOL_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/record.h"

typedef struct scan_op {
    act_rec_device_op r;
    const char *name, *detail;
    uint32_t serial;
} scan_op;

typedef struct scan_api {
    act_rec_api r;
    const char *name;
    uint32_t serial;
} scan_api;

typedef struct scan_range {
    uint32_t serial, seq;
    const char *name;
} scan_range;

typedef struct scan_meta {
    const char *key, *value;
} scan_meta;

typedef struct spool_scan {
    act_spool_header hdr;
    scan_op *ops;
    size_t n_ops;
    scan_api *apis;
    size_t n_apis;
    act_rec_extcorr *ext;
    size_t n_ext;
    const char **errors;
    size_t n_errors;
    act_rec_clock *clocks;
    size_t n_clocks;
    act_rec_device *devices;
    size_t n_devices;
    act_rec_queue *queues;
    size_t n_queues;
    scan_range *ranges;
    size_t n_ranges;
    scan_meta *meta; /* ACT_REC_METADATA */
    size_t n_meta;
} spool_scan;

/* Read `path`; returns 0 or -1 (message on stderr). One scan at a time:
 * names point into storage that spool_scan_free releases. */
int spool_scan_read(const char *path, spool_scan *s);
void spool_scan_free(spool_scan *s);
/* Value of metadata `key` (NULL if absent). */
const char *spool_scan_metadata(const spool_scan *s, const char *key);
/* Name of the range an ext value designates (NULL if none). */
const char *spool_scan_range_name(const spool_scan *s, uint64_t ext);
/* The launch of a device op: the API record of the same source with the
 * same vendor corr whose start is the latest at or before the op's start
 * (vendor ids repeat). NULL if none. */
const scan_api *spool_scan_launch_of(const spool_scan *s, const scan_op *op);

#endif
