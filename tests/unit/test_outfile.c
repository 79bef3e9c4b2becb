/*
 * test_outfile.c -- an output file's life (writers/outfile.h) at its
 * close: --force replaces what is at the path by an exchange and an unlink
 * (outfile.c, replace), and the path names a whole file throughout; the
 * file replaced is left open for the caller to free; nothing at the path
 * is created; a directory that appears at the path meanwhile is kept and
 * the close fails, as rename(2) would; without --force a file that
 * appears meanwhile is kept. No temporary file is left behind in any case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acceltrace.h"
#include "tmpdir.h"
#include "writers/outfile.h"

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_contents(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_string_equal(buf, text);
}

/* Entries in dir, "." and ".." left out. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* Open path's temporary file and write text to it. */
static act_outfile *written(const char *path, int force, const char *text)
{
    act_outfile *f = NULL;
    char err[256] = "";
    assert_int_equal(act_outfile_open(&f, path, force, 0, 0, err, sizeof(err)), 0);
    assert_int_equal(write(act_outfile_fd(f), text, strlen(text)), (ssize_t)strlen(text));
    return f;
}

static void test_force_replaces(void **state)
{
    (void)state;
    char dir[64], path[128];
    tmpdir_make(dir, sizeof(dir), "outf");
    snprintf(path, sizeof(path), "%s/t.json", dir);
    put_file(path, "old\n");
    struct stat before;
    assert_int_equal(stat(path, &before), 0);

    act_outfile *f = written(path, 1, "new\n");
    int held = -1;
    act_outfile_keep_replaced(f, &held);
    char err[256] = "";
    assert_int_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), 0);
    assert_contents(path, "new\n");
    assert_int_equal(entries(dir), 1); /* the old file's name went too */
    /* The replaced file is the one held, unlinked, freed at its close. */
    assert_true(held >= 0);
    struct stat old;
    assert_int_equal(fstat(held, &old), 0);
    assert_int_equal(old.st_ino, before.st_ino);
    assert_int_equal(old.st_nlink, 0);
    close(held);
    assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_force_nothing_there(void **state)
{
    (void)state;
    char dir[64], path[128];
    tmpdir_make(dir, sizeof(dir), "outf");
    snprintf(path, sizeof(path), "%s/t.json", dir);
    act_outfile *f = written(path, 1, "new\n");
    int held = 7;
    act_outfile_keep_replaced(f, &held);
    char err[256] = "";
    assert_int_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), 0);
    assert_contents(path, "new\n");
    assert_int_equal(held, -1); /* nothing replaced */
    assert_int_equal(entries(dir), 1);
    assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_force_directory_appears(void **state)
{
    (void)state;
    char dir[64], path[128];
    tmpdir_make(dir, sizeof(dir), "outf");
    snprintf(path, sizeof(path), "%s/t.json", dir);
    act_outfile *f = written(path, 1, "new\n");
    assert_int_equal(mkdir(path, 0700), 0); /* between the open and the close */
    char err[256] = "";
    assert_int_not_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISDIR(st.st_mode));  /* kept, where it was */
    assert_int_equal(entries(dir), 1); /* and no temporary file */
    assert_int_equal(rmdir(path), 0);
    assert_int_equal(tmpdir_remove(dir), 0);
}

static void test_no_force_file_appears(void **state)
{
    (void)state;
    char dir[64], path[128];
    tmpdir_make(dir, sizeof(dir), "outf");
    snprintf(path, sizeof(path), "%s/t.json", dir);
    act_outfile *f = written(path, 0, "new\n");
    put_file(path, "theirs\n");
    char err[256] = "";
    assert_int_equal(act_outfile_close(f, 1, 0, 0, err, sizeof(err)), ACT_E_IO);
    assert_non_null(strstr(err, "already exists"));
    assert_contents(path, "theirs\n");
    assert_int_equal(entries(dir), 1);
    assert_int_equal(tmpdir_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_force_replaces),
        cmocka_unit_test(test_force_nothing_there),
        cmocka_unit_test(test_force_directory_appears),
        cmocka_unit_test(test_no_force_file_appears),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
