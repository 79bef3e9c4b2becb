int act_cmd_summary(int argc, char **argv) { (void)argc; (void)argv; return 2; }
