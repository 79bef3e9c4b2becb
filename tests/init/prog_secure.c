/*
 * prog_secure.c -- prints what the configuration says when the process
 * runs set-uid (AT_SECURE): "secure=S rc=R spool='...' buffer=B", so
 * check_init.py can show that ACCELTRACE_* variables are ignored there.
 */
#include <stdio.h>
#include <sys/auxv.h>

#include "acceltrace.h"
#include "config.h"
#include "init/init.h"

int main(void)
{
    char err[512] = "";
    int rc = act_config_load(&act_cfg, err, sizeof(err));
    int init = act_init();
    printf("secure=%lu rc=%d init=%d spool='%s' buffer=%llu\n", getauxval(AT_SECURE), rc, init,
           act_cfg.spool_dir, (unsigned long long)act_cfg.buffer_size);
    return 0;
}
