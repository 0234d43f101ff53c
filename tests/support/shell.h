/* Runs shell commands for tests of the command line and of plugins. */
#ifndef RILL_TESTS_SUPPORT_SHELL_H
#define RILL_TESTS_SUPPORT_SHELL_H

/* Runs the command printf formats from fmt (through popen, so /bin/sh), puts what it
 * printed (stdout, and stderr where the command redirects it) in *out (free with free())
 * and returns its exit status, or -1 when a signal ended it. Fails the test when the
 * command cannot be started. */
int sh(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
