/*
 * native.c -- acceltrace._native, the compiled half of the Python package:
 * the annotation calls that a program makes in its hot loops (range as a
 * context manager, push/pop, mark, counter, string metadata) in C.
 *
 * Why C: through ctypes each call looked its function up, encoded its name
 * into a new bytes object and went through libffi (about 2-5 us a range);
 * here a call costs what CPython charges for calling a C function plus the
 * library's own work (BENCHMARKS.md, "Python annotations").
 *
 * - Names: a str's UTF-8 form is computed once and cached in the str
 *   itself by CPython (PyUnicode_AsUTF8AndSize), so a name used again costs
 *   no encoding and no allocation; the library interns it per thread.
 * - Functions: resolved once, by dlsym, from the very libacceltrace the
 *   package loaded with ctypes (never a second copy of it); until then each
 *   entry point asks the package to load and bind it (_setup's `bind`).
 * - No tool attached: the entry points read the library's act__idle flag
 *   first, as the C header's inline wrappers do, and return at once.
 * - Errors are raised by the package's own helpers (_setup), so both
 *   bindings raise the same classes with the same text.
 *
 * Only CPython's limited API (Py_LIMITED_API, 3.10): one build serves every
 * CPython from 3.10 on (the wheel is tagged abi3). Where this module cannot
 * load, the package uses its ctypes binding (acceltrace/_binding.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The header's inline wrappers name the library's symbols; this module
 * reaches them through pointers only. */
#define ACT_NO_INLINE
#include "acceltrace.h"

#if defined(__GNUC__) || defined(__clang__)
#define NATIVE_LIKELY(x)   __builtin_expect(!!(x), 1)
#define NATIVE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define NATIVE_LIKELY(x)   (x)
#define NATIVE_UNLIKELY(x) (x)
#endif

/* ---- the library's functions, resolved once ------------------------------- */

struct native_fns {
    int (*range_push)(const char *);
    int (*range_pop)(void);
    void (*mark)(const char *);
    void (*counter)(const char *, double);
    int (*metadata_set)(const char *, const char *);
    int (*metadata_set_json)(const char *, const char *);
    const int *idle; /* act__idle; never NULL once bound */
};

static struct native_fns native_fns;
static const int native_idle_unknown = 0;

/* The package's helpers (acceltrace/_binding.py), given by _setup(). */
static PyObject *native_hook_bind;     /* bind(): load the library, call _bind */
static PyObject *native_hook_raise;    /* raise_error(rc, call) */
static PyObject *native_hook_missing;  /* missing(symbol): raise its error */
static PyObject *native_hook_decorate; /* decorate(range, fn) */
static PyObject *native_hook_bare;     /* bare(fn): @acceltrace.range */

static int native_idle_now(void)
{
    return __atomic_load_n(native_fns.idle, __ATOMIC_RELAXED);
}

/* _bind(path): resolve the functions from the library loaded at `path`
 * (already loaded by the package: RTLD_NOLOAD finds that copy). Functions
 * the library lacks stay NULL; their entry points raise. */
static PyObject *native_bind(PyObject *mod, PyObject *arg)
{
    const char *path = PyUnicode_AsUTF8AndSize(arg, NULL);
    if (!path)
        return NULL;
    void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return PyErr_Format(PyExc_ImportError, "acceltrace._native: %s is not loaded (%s)", path,
                            dlerror());
    int *const *idle_ptr = dlsym(h, "act__idle_ptr");
    struct native_fns f = {0};
    *(void **)&f.range_push = dlsym(h, "act_range_push");
    *(void **)&f.range_pop = dlsym(h, "act_range_pop");
    *(void **)&f.mark = dlsym(h, "act_mark");
    *(void **)&f.counter = dlsym(h, "act_counter");
    *(void **)&f.metadata_set = dlsym(h, "act_metadata_set");
    *(void **)&f.metadata_set_json = dlsym(h, "act_metadata_set_json");
    f.idle = idle_ptr && *idle_ptr ? *idle_ptr : &native_idle_unknown;
    /* The handle stays open: the pointers must outlive any dlclose. */
    native_fns = f;
    Py_RETURN_NONE;
}

/* Slow path of every entry point whose function is not bound yet: bind,
 * then raise the package's error if this build lacks `symbol`. */
static int native_need(void *const *slot, const char *symbol)
{
    if (!native_fns.idle) {
        PyObject *r = PyObject_CallNoArgs(native_hook_bind);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    if (*slot)
        return 0;
    PyObject *r = PyObject_CallFunction(native_hook_missing, "s", symbol);
    Py_XDECREF(r);
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "acceltrace._native: %s is not bound", symbol);
    return -1;
}

#define NATIVE_NEED(fn, symbol)                                                                    \
    (NATIVE_LIKELY(native_fns.fn != NULL) ? 0 : native_need((void *const *)&native_fns.fn, symbol))

/* Raise the package's error for `rc` from `call`; returns NULL. */
static PyObject *native_raise(int rc, const char *call)
{
    PyObject *r = PyObject_CallFunction(native_hook_raise, "is", rc, call);
    Py_XDECREF(r);
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "%s failed (%d)", call, rc);
    return NULL;
}

static int native_quiet(int rc)
{
    return rc >= 0 || rc == ACT_E_DISABLED || rc == ACT_E_FULL;
}

/* ---- names ------------------------------------------------------------------ */

/* A name as the NUL-terminated UTF-8 the library takes. `*owner` is set to
 * a new reference when the bytes live in an object made here (a str with
 * lone surrogates, encoded with surrogatepass as the ctypes binding does);
 * otherwise the bytes live in `name` itself. NULL with an exception on a
 * name that is not str or bytes, or that holds a NUL. */
static const char *native_name_utf8(PyObject *name, const char *what, PyObject **owner)
{
    Py_ssize_t n;
    const char *s;
    *owner = NULL;
    if (PyUnicode_Check(name)) {
        s = PyUnicode_AsUTF8AndSize(name, &n);
        if (NATIVE_UNLIKELY(!s)) {
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
                return NULL;
            PyErr_Clear();
            *owner = PyUnicode_AsEncodedString(name, "utf-8", "surrogatepass");
            if (!*owner)
                return NULL;
            s = PyBytes_AsString(*owner);
            n = PyBytes_Size(*owner);
        }
    } else if (PyBytes_Check(name)) {
        s = PyBytes_AsString(name);
        n = PyBytes_Size(name);
    } else {
        PyObject *t = PyObject_GetAttrString((PyObject *)Py_TYPE(name), "__name__");
        if (t) {
            PyErr_Format(PyExc_TypeError, "%s must be str, not %U", what, t);
            Py_DECREF(t);
        }
        return NULL;
    }
    if (NATIVE_UNLIKELY(memchr(s, '\0', (size_t)n) != NULL)) {
        Py_CLEAR(*owner);
        PyErr_Format(PyExc_ValueError, "%s must not contain NUL characters", what);
        return NULL;
    }
    return s;
}

/* ---- the per-thread record of what each open range's exit must do ---------- */

/* What leaving a range does: nothing (its push changed nothing: no tool),
 * pop, or pop without raising (pushed outside the capture window: the
 * library moved its stack and counts the pop outside the window too). */
enum { NATIVE_EXIT_NONE = 0, NATIVE_EXIT_POP = 1, NATIVE_EXIT_POP_QUIET = 2 };

struct native_stack {
    uint32_t depth, cap;
    uint8_t *how;
};

static _Thread_local struct native_stack native_tls;
static pthread_key_t native_stack_key;
static pthread_once_t native_stack_once = PTHREAD_ONCE_INIT;

static void native_stack_free(void *p)
{
    free(p);
}

static void native_stack_key_make(void)
{
    /* The destructor frees a thread's array when the thread ends. */
    (void)pthread_key_create(&native_stack_key, native_stack_free);
}

/* Room for one more entry; NULL with MemoryError. */
static uint8_t *native_stack_grow(struct native_stack *st)
{
    uint32_t cap = st->cap ? st->cap * 2 : 64;
    if (cap <= st->cap) {
        PyErr_NoMemory();
        return NULL;
    }
    uint8_t *p = realloc(st->how, cap);
    if (!p) {
        PyErr_NoMemory();
        return NULL;
    }
    pthread_once(&native_stack_once, native_stack_key_make);
    (void)pthread_setspecific(native_stack_key, p);
    st->how = p;
    st->cap = cap;
    return &p[st->depth];
}

static uint8_t *native_stack_reserve(void)
{
    struct native_stack *st = &native_tls;
    if (NATIVE_LIKELY(st->depth < st->cap))
        return &st->how[st->depth];
    return native_stack_grow(st);
}

/* Push the range `s`, recording on this thread what its exit must do.
 * Returns 0, or -1 with an exception. */
static int native_push(const char *s)
{
    uint8_t *slot = native_stack_reserve();
    if (!slot)
        return -1;
    int rc = native_idle_now() ? ACT_E_DISABLED : native_fns.range_push(s);
    if (NATIVE_LIKELY(rc == ACT_OK || rc == ACT_E_FULL))
        *slot = NATIVE_EXIT_POP;
    else if (rc == ACT_E_DISABLED)
        *slot = native_idle_now() ? NATIVE_EXIT_NONE : NATIVE_EXIT_POP_QUIET;
    else {
        native_raise(rc, "act_range_push");
        return -1;
    }
    native_tls.depth++;
    return 0;
}

/* Pop the innermost range of this thread; `raising` says whether an error
 * may be raised (not while an exception is leaving the range). A pop with
 * nothing pushed here still reaches the library (a range pushed in C). */
static int native_pop(int raising)
{
    struct native_stack *st = &native_tls;
    int how = NATIVE_EXIT_POP;
    if (NATIVE_LIKELY(st->depth > 0))
        how = st->how[--st->depth];
    if (how == NATIVE_EXIT_NONE)
        return 0;
    int rc = native_fns.range_pop();
    if (NATIVE_UNLIKELY(!native_quiet(rc)) && how == NATIVE_EXIT_POP && raising) {
        native_raise(rc, "act_range_pop");
        return -1;
    }
    return 0;
}

/* ---- acceltrace.range --------------------------------------------------------- */

typedef struct {
    PyObject_HEAD PyObject *name; /* the str (or bytes) given */
    PyObject *owner;              /* bytes holding utf8, when not `name` */
    const char *utf8;
} native_range;

static PyObject *native_range_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *name = NULL;
    if (NATIVE_LIKELY(kwds == NULL && PyTuple_Size(args) == 1)) {
        name = PyTuple_GetItem(args, 0);
    } else {
        static char *kwlist[] = {"name", NULL};
        if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:range", kwlist, &name))
            return NULL;
    }
    if (!PyUnicode_Check(name) && !PyBytes_Check(name) && PyCallable_Check(name))
        return PyObject_CallFunctionObjArgs(native_hook_bare, name, NULL); /* @acceltrace.range */
    PyObject *owner;
    const char *s = native_name_utf8(name, "range name", &owner);
    if (!s)
        return NULL;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    native_range *self = (native_range *)alloc(type, 0);
    if (!self) {
        Py_XDECREF(owner);
        return NULL;
    }
    Py_INCREF(name);
    self->name = name;
    self->owner = owner;
    self->utf8 = s;
    return (PyObject *)self;
}

static void native_range_dealloc(PyObject *op)
{
    native_range *self = (native_range *)op;
    PyTypeObject *type = Py_TYPE(op);
    Py_XDECREF(self->name);
    Py_XDECREF(self->owner);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(op);
    Py_DECREF(type); /* instances of a heap type hold a reference to it */
}

static PyObject *native_range_enter(PyObject *op, PyObject *unused)
{
    if (NATIVE_NEED(range_push, "act_range_push") < 0 ||
        NATIVE_NEED(range_pop, "act_range_pop") < 0)
        return NULL;
    if (native_push(((native_range *)op)->utf8) < 0)
        return NULL;
    Py_INCREF(op);
    return op;
}

static PyObject *native_range_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs)
{
    if (NATIVE_NEED(range_pop, "act_range_pop") < 0)
        return NULL;
    int raising = nargs < 1 || args[0] == Py_None;
    if (native_pop(raising) < 0)
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *native_range_call(PyObject *op, PyObject *args, PyObject *kwds)
{
    PyObject *fn;
    if (kwds != NULL || PyTuple_Size(args) != 1) {
        PyErr_SetString(PyExc_TypeError, "acceltrace.range(...) decorates one function");
        return NULL;
    }
    fn = PyTuple_GetItem(args, 0);
    return PyObject_CallFunctionObjArgs(native_hook_decorate, op, fn, NULL);
}

static PyObject *native_range_get_name(PyObject *op, void *unused)
{
    PyObject *name = ((native_range *)op)->name;
    Py_INCREF(name);
    return name;
}

static PyObject *native_range_repr(PyObject *op)
{
    return PyUnicode_FromFormat("acceltrace.range(%R)", ((native_range *)op)->name);
}

static PyMethodDef native_range_methods[] = {
    {"__enter__", native_range_enter, METH_NOARGS, "Open the range on this thread."},
    {"__exit__", (PyCFunction)(void (*)(void))native_range_exit, METH_FASTCALL, "Close the range."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef native_range_getset[] = {
    {"name", native_range_get_name, NULL, "The range's name.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot native_range_slots[] = {
    {Py_tp_new, native_range_new},
    {Py_tp_dealloc, native_range_dealloc},
    {Py_tp_call, native_range_call},
    {Py_tp_repr, native_range_repr},
    {Py_tp_methods, native_range_methods},
    {Py_tp_getset, native_range_getset},
    {Py_tp_doc, "A named range on the calling thread: ``with acceltrace.range(\"x\"):`` or "
                "``@acceltrace.range(\"x\")`` (also bare ``@acceltrace.range``, which uses the "
                "function's qualified name). Ranges nest."},
    {0, NULL},
};

/* No GC: a range holds only a str and a bytes, which cannot hold it back. */
static PyType_Spec native_range_spec = {
    "acceltrace.range", sizeof(native_range), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    native_range_slots,
};

/* ---- module functions ------------------------------------------------------------ */

static PyObject *native_push_fn(PyObject *mod, PyObject *name)
{
    if (NATIVE_NEED(range_push, "act_range_push") < 0)
        return NULL;
    PyObject *owner;
    const char *s = native_name_utf8(name, "range name", &owner);
    if (!s)
        return NULL;
    int rc = native_push(s);
    Py_XDECREF(owner);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *native_pop_fn(PyObject *mod, PyObject *unused)
{
    if (NATIVE_NEED(range_pop, "act_range_pop") < 0 || native_pop(1) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *native_mark_fn(PyObject *mod, PyObject *name)
{
    if (NATIVE_NEED(mark, "act_mark") < 0)
        return NULL;
    PyObject *owner;
    const char *s = native_name_utf8(name, "mark name", &owner);
    if (!s)
        return NULL;
    if (!native_idle_now())
        native_fns.mark(s);
    Py_XDECREF(owner);
    Py_RETURN_NONE;
}

/* float(value), as the ctypes binding converts it (str accepted). */
static int native_double(PyObject *value, double *out)
{
    if (PyFloat_Check(value)) {
        *out = PyFloat_AsDouble(value);
        return 0;
    }
    PyObject *f = PyNumber_Float(value);
    if (!f)
        return -1;
    *out = PyFloat_AsDouble(f);
    Py_DECREF(f);
    return 0;
}

static PyObject *native_counter_fn(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "counter() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (NATIVE_NEED(counter, "act_counter") < 0)
        return NULL;
    PyObject *owner;
    const char *s = native_name_utf8(args[0], "counter name", &owner);
    if (!s)
        return NULL;
    double v;
    if (native_double(args[1], &v) < 0) {
        Py_XDECREF(owner);
        return NULL;
    }
    if (!native_idle_now())
        native_fns.counter(s, v);
    Py_XDECREF(owner);
    Py_RETURN_NONE;
}

/* metadata_set(key, value, json): act_metadata_set, or with `json` true
 * act_metadata_set_json; raises on every error, ACT_E_DISABLED included (a
 * value asked for must not vanish silently). */
static PyObject *native_metadata_fn(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "metadata_set() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    int json = PyObject_IsTrue(args[2]);
    if (json < 0)
        return NULL;
    if (json ? NATIVE_NEED(metadata_set_json, "act_metadata_set_json") < 0
             : NATIVE_NEED(metadata_set, "act_metadata_set") < 0)
        return NULL;
    PyObject *kown, *vown;
    const char *k = native_name_utf8(args[0], "metadata key", &kown);
    if (!k)
        return NULL;
    const char *v = native_name_utf8(args[1], json ? "metadata JSON" : "metadata value", &vown);
    if (!v) {
        Py_XDECREF(kown);
        return NULL;
    }
    int rc = json ? native_fns.metadata_set_json(k, v) : native_fns.metadata_set(k, v);
    Py_XDECREF(kown);
    Py_XDECREF(vown);
    if (rc < 0)
        return native_raise(rc, json ? "act_metadata_set_json" : "act_metadata_set");
    Py_RETURN_NONE;
}

/* _setup(bind, raise_error, missing, decorate, bare): the package's helpers. */
static PyObject *native_setup(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "_setup() takes 5 arguments");
        return NULL;
    }
    PyObject **hooks[] = {&native_hook_bind, &native_hook_raise, &native_hook_missing,
                          &native_hook_decorate, &native_hook_bare};
    for (int i = 0; i < 5; i++) {
        PyObject *old = *hooks[i];
        Py_INCREF(args[i]);
        *hooks[i] = args[i];
        Py_XDECREF(old);
    }
    Py_RETURN_NONE;
}

/* _depth(): this thread's open ranges as the binding counts them (tests). */
static PyObject *native_depth(PyObject *mod, PyObject *unused)
{
    return PyLong_FromUnsignedLong(native_tls.depth);
}

#define NATIVE_FASTCALL(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef native_methods[] = {
    {"push", native_push_fn, METH_O, "Open a range named `name` on this thread."},
    {"pop", native_pop_fn, METH_NOARGS, "Close this thread's innermost range."},
    {"mark", native_mark_fn, METH_O, "An instant event named `name`."},
    {"counter", NATIVE_FASTCALL(native_counter_fn), METH_FASTCALL,
     "One sample of the counter `name`."},
    {"metadata_set", NATIVE_FASTCALL(native_metadata_fn), METH_FASTCALL,
     "metadata_set(key, value, json): a top-level member of the trace."},
    {"_bind", native_bind, METH_O, "Resolve the functions of the library loaded at `path`."},
    {"_setup", NATIVE_FASTCALL(native_setup), METH_FASTCALL, "The package's helpers."},
    {"_depth", native_depth, METH_NOARGS, "This thread's open ranges (for tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "acceltrace._native",
    "The annotation calls of acceltrace in C (see acceltrace/_binding.py).",
    -1,
    native_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&native_module);
    if (!m)
        return NULL;
    /* Until _setup: calling a hook raises TypeError, never crashes. */
    PyObject **hooks[] = {&native_hook_bind, &native_hook_raise, &native_hook_missing,
                          &native_hook_decorate, &native_hook_bare};
    for (int i = 0; i < 5; i++) {
        if (!*hooks[i]) {
            Py_INCREF(Py_None);
            *hooks[i] = Py_None;
        }
    }
    /* The interface acceltrace/_binding.py checks (its _API). */
    if (PyModule_AddIntConstant(m, "API", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *range = PyType_FromSpec(&native_range_spec);
    if (!range || PyModule_AddObject(m, "range", range) < 0) {
        Py_XDECREF(range);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
