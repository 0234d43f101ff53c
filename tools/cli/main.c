/* rill -- the command line: inspect a model, run it on .npy inputs, list operators,
 * prune a model to chosen outputs, list checkpoints, draw a program. This file holds the
 * usage text and dispatches to the commands, one file each (cli.h).
 *
 * Exit status: 0 success, 1 a runtime error (message on stderr), 2 a usage error. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage_text[] =
    "usage: rill <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  inspect [-v] MODEL              print blocks, variables, ops, feed/fetch targets\n"
    "                                  (-v: also Paddle's op_callstack attributes)\n"
    "  run MODEL --input NAME=FILE.npy [--input ...] [--params FILE] [--output DIR]\n"
    "            [--lod NAME=OFFSETS] [--repeat N] [--bench N] [--threads N]\n"
    "            [--sequential | --parallel] [-O LEVEL] [--no-memory-optim] [--int8]\n"
    "            [--allow-file-ops DIR] [--profile TRACE.json] [--device PLACE] [-v]\n"
    "                                  run the model; print each output; with --output,\n"
    "                                  write DIR/output_<col>.npy; with --repeat, run N\n"
    "                                  more times and print the time per run; with\n"
    "                                  --bench, run N more times after warm-up runs and\n"
    "                                  print latency p50/p90/p99/mean and peak memory;\n"
    "                                  --profile writes a trace-event timeline of the runs\n"
    "                                  (the timed ones with --bench) and prints the per-op\n"
    "                                  report;\n"
    "                                  --device runs it on PLACE (cpu, cuda:0); -v\n"
    "                                  (--verbose) lists the copies between places\n"
    "                                  (ops without a kernel on PLACE run on the host);\n"
    "                                  --threads sets the worker count, --sequential/\n"
    "                                  --parallel the schedule (default: chosen per\n"
    "                                  program); -O 0|1|2 the inference passes (default\n"
    "                                  2: dropout removal, batch_norm folding, fc and\n"
    "                                  conv fusion, in-place activations; 1: the first\n"
    "                                  two; 0: none); --int8 adds the INT8 pass: convs,\n"
    "                                  muls and matmuls between a fake quantize op and\n"
    "                                  its dequantizer run in int8 (where the CPU has\n"
    "                                  AVX2); --no-memory-optim gives every\n"
    "                                  temporary its own buffer; --lod gives input NAME\n"
    "                                  a LoD: offsets separated by ',', levels by ';'\n"
    "                                  (--lod words=0,3,7, --lod 'x=0,2;0,1,3')\n"
    "                                  A model whose ops read or write files (save, load,\n"
    "                                  checkpoint...) is refused unless --allow-file-ops\n"
    "                                  names a directory holding every path they use\n"
    "  ops [NAME]                      registered operators (or one) and their schemas\n"
    "  prune MODEL --output DIR [--fetch NAME ...] [--feed NAME ...] [--params FILE]\n"
    "              [--combined FILE]\n"
    "                                  write an inference model computing only the fetch\n"
    "                                  variables (default: the model's) from the feeds\n"
    "                                  (default: the model's): DIR/__model__ plus the\n"
    "                                  parameters it needs, one file each or --combined\n"
    "  checkpoint ls DIR               list DIR's checkpoints, newest first: step, time,\n"
    "                                  size, variables, and whether each verifies (manifest\n"
    "                                  and every file's size and CRC32C) or why not\n"
    "  dot MODEL [-o FILE]             the program's graph in Graphviz form (ops as boxes,\n"
    "                                  variables as ellipses, parameters grey, shapes on\n"
    "                                  the edges, sub-blocks as clusters); render it with\n"
    "                                  'dot -Tsvg FILE > graph.svg'\n"
    "  trace summary TRACE.json [--svg OPS.svg]\n"
    "                                  time per op type in a profiler trace (rill run\n"
    "                                  --profile, fluid.profiler); --svg draws it as bars\n"
    "  trace merge A.json B.json ... -o ALL.json\n"
    "                                  one timeline from several processes' traces,\n"
    "                                  aligned by the wall-clock time each one started\n"
    "  --help                          this text\n"
    "  --version                       the version\n"
    "\n"
    "run, ops, dot and inspect take --plugin LIB (repeatable): an op library loaded\n"
    "first, whose ops the model may use (examples/plugin/README.md).\n"
    "MODEL is a model directory, a __model__ file or a .pdmodel path.\n"
    "Exit status: 0 ok, 1 runtime error, 2 usage error.\n";

/* The commands, by name. */
static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
} commands[] = {
    {"inspect", cmd_inspect}, {"run", cmd_run},   {"ops", cmd_ops},
    {"prune", cmd_prune},     {"checkpoint", cmd_checkpoint}, {"dot", cmd_dot},
    {"trace", cmd_trace},
};

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage_text, stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("rill %s\n", rill_version());
    return EXIT_OK;
  }
  int nargs = argc - 2, rc = take_plugins(&nargs, argv + 2);
  if (rc) return rc;
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(nargs, argv + 2);
  return usage_error("unknown command '%s'", cmd);
}
