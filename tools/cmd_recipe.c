/*
 * cmd_recipe.c -- `acceltrace recipe NAME [OPTIONS] INPUT...`: multi-rank
 * recipes on DuckDB or Dask. They are Python (python/acceltrace/recipe,
 * needing the `analysis` extra), so this command only finds a Python and the
 * package and execs `python -c <run acceltrace.recipe.cli>` with the same
 * arguments: exit status and output are the recipe's own.
 *
 * The Python: ACCELTRACE_PYTHON, else the checkout's .venv/bin/python when
 * this command runs from a checkout's build tree (build/bin), else python3
 * on PATH. The package: the first of <repo>/python (build tree),
 * ../lib/python3/dist-packages (cmake --install) and ../.. (inside a wheel's
 * package) that has acceltrace/recipe, put first on PYTHONPATH; else
 * wherever that Python finds it. Missing package or packages: one line on
 * stderr, exit 2.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "self_dir.h"

/* Runs the recipe command, or says in one line what is missing (exit 2). */
static const char RUN_PY[] =
    "import sys\n"
    "try:\n"
    "    from acceltrace.recipe.cli import main\n"
    "except ImportError as e:\n"
    "    sys.stderr.write('acceltrace recipe: the acceltrace Python package is not found by '\n"
    "                     '%s (%s); set ACCELTRACE_PYTHON to a Python that has it, with '\n"
    "                     'pip install acceltrace[analysis]\\n' % (sys.executable, e))\n"
    "    sys.exit(2)\n"
    "sys.exit(main(sys.argv[1:]))\n";

static int has_recipe(const char *dir)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/acceltrace/recipe/cli.py", dir) >= sizeof p)
        return 0;
    return access(p, R_OK) == 0;
}

int act_cmd_recipe(int argc, char **argv)
{
    char exe[PATH_MAX], pkg[PATH_MAX], venv[PATH_MAX];
    const char *python = getenv("ACCELTRACE_PYTHON");
    int found = 0;
    if (act_self_dir(exe, sizeof exe - 64) == 0) {
        static const char *const rel[] = {"../../python", "../lib/python3/dist-packages", "../.."};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0] && !found; i++) {
            if ((size_t)snprintf(pkg, sizeof pkg, "%s/%s", exe, rel[i]) >= sizeof pkg)
                continue;
            found = has_recipe(pkg);
            if (found && i == 0 && !(python && *python) &&
                (size_t)snprintf(venv, sizeof venv, "%s/../../.venv/bin/python", exe) <
                    sizeof venv &&
                access(venv, X_OK) == 0)
                python = venv;
        }
    }
    if (!python || !*python)
        python = "python3";
    if (found) {
        const char *old = getenv("PYTHONPATH");
        size_t n = strlen(pkg) + (old ? strlen(old) : 0) + 2;
        char *pp = malloc(n);
        if (!pp)
            return 2;
        snprintf(pp, n, "%s%s%s", pkg, old && *old ? ":" : "", old && *old ? old : "");
        setenv("PYTHONPATH", pp, 1);
        free(pp);
    }
    /* python -c RUN_PY ARGS...: sys.argv[1:] are the recipe's arguments. */
    char **av = calloc((size_t)argc + 3, sizeof *av);
    if (!av)
        return 2;
    av[0] = (char *)python;
    av[1] = "-c";
    av[2] = (char *)RUN_PY;
    for (int i = 1; i < argc; i++)
        av[2 + i] = argv[i];
    fflush(stdout);
    execvp(python, av);
    fprintf(stderr,
            "acceltrace recipe: cannot run %s (%s): recipes are Python; set ACCELTRACE_PYTHON to "
            "a Python with the acceltrace package (pip install acceltrace[analysis])\n",
            python, strerror(errno));
    free(av);
    return 2;
}
