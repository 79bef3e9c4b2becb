/* nohooks.c -- a loadable module with no act_hooks section (tests/init). */
__attribute__((visibility("default"))) int nohooks_value(void)
{
    return 42;
}
