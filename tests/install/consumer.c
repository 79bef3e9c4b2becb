/* consumer.c -- a program using the installed acceltrace: it must compile
 * and link with only what the install provides. */
#include <acceltrace.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    if (strcmp(act_version(), ACT_VERSION_STRING) != 0)
        return 1;
    /* No tool attached: annotations are no-ops that say so. */
    if (act_range_push("x") != ACT_E_DISABLED)
        return 2;
    printf("consumer ok %s\n", act_version());
    return 0;
}
