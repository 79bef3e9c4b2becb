int act_cmd_run(int argc, char **argv) { (void)argc; (void)argv; return 2; }
