/*
 * pystack.c -- the Python stack behind an intercepted call
 * (--python-backtrace, ACCELTRACE_PYTHON_BACKTRACE).
 *
 * When the calling thread holds the GIL of a CPython >= 3.9 in this
 * process, its innermost N frames become the "Python stack" argument of the
 * call's API record: one frame a line, innermost first, each written as
 * kineto names its python_function events, "file(line): function". The text
 * is an interned string of the thread (core/recorder/strings.c), so a stack
 * seen a thousand times is stored once.
 *
 * Only CPython's public, documented functions are used, resolved at run
 * time with dlsym: the recorder is not linked against libpython, and a
 * program that is not Python has none of them (one note, no stacks).
 *
 * Design notes:
 *  P1. Nothing is read unless this thread holds the GIL (PyGILState_Check)
 *      and no Python exception is pending: the frames are then this
 *      thread's, stable, and the calls below may run. A call made with the
 *      GIL released (a blocking wait in an extension) gets no stack rather
 *      than a guess; the GIL is never taken here (it could deadlock the
 *      program).
 *  P2. A code object's file and function names are read once and cached by
 *      the object's address, with a reference held so that the address
 *      cannot be reused by another code object while it is cached. The
 *      cache is bounded; past it, names are read each time.
 *  P3. Off (depth 0), the hot paths pay one predictable branch on
 *      act__pystack_depth (rec_write.h).
 *  P4. A call made with the GIL released still gets its stack, read when
 *      the GIL is back and the calling frames are the same (recorder/emit.c):
 *      until then a HOLD arg stands in and the builder keeps the thread's
 *      calls back; one BACK arg then gives them all the stack (record.h).
 *      On the main thread by Py_AddPendingCall (documented as callable
 *      without the GIL; run at the interpreter's next check): no cost
 *      elsewhere. On other threads (pending calls run on the main thread
 *      only) by a profile function (PyEval_SetProfile) installed at the
 *      thread's first captured call that holds the GIL, where the program
 *      has no profiler of its own (sys.getprofile() is None): at the first
 *      event after the call, and, for extension functions seen doing so
 *      (PyCFunction objects report C_CALL), read at their C_CALL and kept
 *      for the calls inside. The profile function costs that thread's
 *      Python code about 23 ns per call event (BENCHMARKS.md).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "acceltrace.h"
#include "core/common.h"
#include "core/internal.h"

/* CPython's functions (all in the stable ABI of 3.9 and later). */
static struct {
    int (*is_initialized)(void);
    int (*gil_check)(void);
    void *(*get_frame)(void);               /* PyEval_GetFrame: borrowed */
    void *(*frame_code)(void *);            /* PyFrame_GetCode: new reference */
    void *(*frame_back)(void *);            /* PyFrame_GetBack: new reference */
    int (*frame_line)(void *);              /* PyFrame_GetLineNumber */
    void *(*getattr)(void *, const char *); /* PyObject_GetAttrString */
    const char *(*utf8)(void *, ssize_t *); /* PyUnicode_AsUTF8AndSize */
    void *(*err_occurred)(void);
    void (*err_clear)(void);
    void (*incref)(void *);
    void (*decref)(void *);
    /* The profile hook (P4): found apart, a Python without them keeps P1. */
    void (*set_profile)(act_pystack_profile_fn, void *); /* PyEval_SetProfile */
    void *(*sys_get)(const char *);                      /* PySys_GetObject: borrowed */
    void *(*call0)(void *);                              /* PyObject_CallNoArgs */
    void *none;                                          /* Py_None */
    int (*add_pending)(int (*)(void *), void *);         /* Py_AddPendingCall */
    int ok;                                              /* every one found */
} py;

/* Read by the hot paths (core/rec_write.h, P3). */
int act__pystack_depth;
int act__pystack_all;

static pthread_once_t py_once = PTHREAD_ONCE_INIT;

static void *py_sym(const char *name, const char **missing)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p && !*missing)
        *missing = name;
    return p;
}

/* dlsym's object pointer into a function pointer, without type punning. */
#define PY_SYM(field, name)                                                                        \
    do {                                                                                           \
        void *p_ = py_sym(name, &missing);                                                         \
        memcpy(&py.field, &p_, sizeof(p_));                                                        \
    } while (0)

static void py_resolve(void)
{
    const char *missing = NULL;
    PY_SYM(is_initialized, "Py_IsInitialized");
    PY_SYM(gil_check, "PyGILState_Check");
    PY_SYM(get_frame, "PyEval_GetFrame");
    PY_SYM(frame_code, "PyFrame_GetCode");
    PY_SYM(frame_back, "PyFrame_GetBack");
    PY_SYM(frame_line, "PyFrame_GetLineNumber");
    PY_SYM(getattr, "PyObject_GetAttrString");
    PY_SYM(utf8, "PyUnicode_AsUTF8AndSize");
    PY_SYM(err_occurred, "PyErr_Occurred");
    PY_SYM(err_clear, "PyErr_Clear");
    PY_SYM(incref, "Py_IncRef");
    PY_SYM(decref, "Py_DecRef");
    py.ok = missing == NULL;
    PY_SYM(set_profile, "PyEval_SetProfile");
    PY_SYM(sys_get, "PySys_GetObject");
    PY_SYM(call0, "PyObject_CallNoArgs");
    py.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    PY_SYM(add_pending, "Py_AddPendingCall");
    if (!py.ok)
        act_log("--python-backtrace: no CPython >= 3.9 in this process (%s not found); the "
                "trace has no Python stacks",
                missing);
}

/* ---- the code-object cache (P2) --------------------------------------- */

#define CODE_SLOTS 4096u /* power of two; about 4 000 distinct functions */

typedef struct {
    void *code; /* a held reference; NULL: empty */
    char *file; /* co_filename, UTF-8 */
    char *func; /* co_qualname where it exists (3.11), else co_name */
} code_names;

static code_names code_cache[CODE_SLOTS];
static unsigned code_used;
static pthread_mutex_t code_lock = PTHREAD_MUTEX_INITIALIZER;

static char *py_str_attr(void *obj, const char *attr)
{
    void *v = py.getattr(obj, attr);
    if (!v) {
        py.err_clear();
        return NULL;
    }
    ssize_t n = 0;
    const char *s = py.utf8(v, &n);
    char *copy = s ? strndup(s, (size_t)n) : NULL;
    if (!s)
        py.err_clear();
    py.decref(v);
    return copy;
}

static int code_read(void *code, code_names *out)
{
    out->file = py_str_attr(code, "co_filename");
    out->func = py_str_attr(code, "co_qualname");
    if (!out->func)
        out->func = py_str_attr(code, "co_name");
    if (out->file && out->func)
        return 0;
    free(out->file);
    free(out->func);
    return -1;
}

/* The names of `code`, cached; copied into file/func (caller's buffers). */
static int code_names_of(void *code, char *file, size_t nfile, char *func, size_t nfunc)
{
    uintptr_t a = (uintptr_t)code;
    unsigned i = (unsigned)((a >> 4) ^ (a >> 16)) & (CODE_SLOTS - 1);
    pthread_mutex_lock(&code_lock);
    for (unsigned probe = 0; probe < 8; probe++, i = (i + 1) & (CODE_SLOTS - 1)) {
        code_names *c = &code_cache[i];
        if (c->code == code) {
            snprintf(file, nfile, "%s", c->file);
            snprintf(func, nfunc, "%s", c->func);
            pthread_mutex_unlock(&code_lock);
            return 0;
        }
        if (!c->code && code_used < CODE_SLOTS / 2) {
            code_names n;
            if (code_read(code, &n) != 0)
                break;
            py.incref(code); /* the address stays this object's (P2) */
            *c = (code_names){code, n.file, n.func};
            code_used++;
            snprintf(file, nfile, "%s", c->file);
            snprintf(func, nfunc, "%s", c->func);
            pthread_mutex_unlock(&code_lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&code_lock);
    code_names n; /* the cache is full around this slot: read it each time */
    if (code_read(code, &n) != 0)
        return -1;
    snprintf(file, nfile, "%s", n.file);
    snprintf(func, nfunc, "%s", n.func);
    free(n.file);
    free(n.func);
    return 0;
}

/* ---- capture ------------------------------------------------------------ */

void act_pystack_configure(int depth, int all)
{
    if (depth < 0)
        depth = 0;
    if (depth > ACT_PYSTACK_MAX_DEPTH)
        depth = ACT_PYSTACK_MAX_DEPTH;
    act__pystack_all = depth && all;
    __atomic_store_n(&act__pystack_depth, depth, __ATOMIC_RELEASE);
}

int act_pystack_gil_released(void)
{
    pthread_once(&py_once, py_resolve);
    return py.ok && py.is_initialized() && !py.gil_check();
}

int act_pystack_pending(int (*fn)(void *), void *arg)
{
    pthread_once(&py_once, py_resolve);
    return py.ok && py.add_pending && py.add_pending(fn, arg) == 0;
}

int act_pystack_profile_install(act_pystack_profile_fn fn)
{
    pthread_once(&py_once, py_resolve);
    if (!py.ok || !py.set_profile || !py.sys_get || !py.call0 || !py.none || !py.is_initialized() ||
        !py.gil_check() || py.err_occurred())
        return 0;
    void *get = py.sys_get("getprofile"); /* borrowed */
    void *cur = get ? py.call0(get) : NULL;
    if (!cur) {
        py.err_clear();
        return 0;
    }
    int none = cur == py.none;
    py.decref(cur);
    if (!none)
        return 0; /* the program's own profiler stays (P4) */
    py.set_profile(fn, NULL);
    if (py.err_occurred()) /* an audit hook refused it */
        py.err_clear();
    return 1;
}

uint64_t act_pystack_walk(int depth, act_pystack_frames *w)
{
#define walk (*w)
    pthread_once(&py_once, py_resolve);
    walk.n = 0;
    if (!py.ok || !py.is_initialized() || !py.gil_check() || py.err_occurred())
        return 0;             /* P1 */
    void *f = py.get_frame(); /* borrowed */
    if (!f)
        return 0;
    if (depth > ACT_PYSTACK_MAX_DEPTH)
        depth = ACT_PYSTACK_MAX_DEPTH;
    uint64_t key = 1469598103934665603ull;
    py.incref(f);
    while (f && walk.n < depth) {
        void *code = py.frame_code(f);
        if (code) {
            /* The frame holds its code: the pointer outlives this call. */
            py.decref(code);
            int line = py.frame_line(f);
            walk.code[walk.n] = code;
            walk.line[walk.n++] = line;
            key = (key ^ (uintptr_t)code) * 1099511628211ull;
            key = (key ^ (uint32_t)line) * 1099511628211ull;
        }
        void *back = py.frame_back(f);
        py.decref(f);
        f = back;
    }
    if (f)
        py.decref(f);
    return walk.n ? key | 1 : 0;
#undef walk
}

size_t act_pystack_walk_text(const act_pystack_frames *w, char *buf, size_t cap)
{
#define walk (*w)
    size_t len = 0;
    char file[1024], func[256];
    if (cap)
        buf[0] = '\0';
    for (int i = 0; i < walk.n; i++) {
        if (code_names_of(walk.code[i], file, sizeof(file), func, sizeof(func)) != 0)
            continue;
        int n = snprintf(buf + len, cap - len, "%s%s(%d): %s", len ? "\n" : "", file, walk.line[i],
                         func);
        if (n < 0 || (size_t)n >= cap - len)
            break;
        len += (size_t)n;
    }
    return len;
#undef walk
}
