/*
 * errors.c -- act_strerror: the text of every ACT_E_* code, generated from
 * the one list in acceltrace.h (ACT_ERRORS). In core, because every layer
 * says why something failed (start-up, sources, rt), and a lower layer
 * never calls up into api/ for it.
 */
#include "acceltrace.h"
#include "common.h"

ACT_EXPORT const char *act_strerror(int err)
{
    switch (err) {
#define ACT__ERROR_TEXT(name, value, text)                                                         \
    case name: return text;
        ACT_ERRORS(ACT__ERROR_TEXT)
#undef ACT__ERROR_TEXT
    default: return "unknown error";
    }
}
