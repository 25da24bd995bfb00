#pragma once
// The subcommands besides a run: each takes the parsed command line and returns the exit code
// (core/run_setup.hpp's kExit*), having printed what it found.
#include "core/config.hpp"
#include "core/registry.hpp"

namespace mpscheck::app {

// `env`: the environment a run would record, one key a line.
int print_env(const Config& cfg);
// `compare BEFORE AFTER`: what regressed between two JSON records.
int compare_command(const Config& cfg);
// `merge REPORT...` (and `merge --cells`): one record, and every format merge offers, from several.
int merge_command(const Config& cfg);
// `expect --from REPORT`: a starting expectations file, to stdout or -o FILE.
int expect_command(const Config& cfg);
// `repro ID`: a case's bug report or, with --script, its Python reproducer.
int print_reproducer(const Config& cfg, const Registry& registry);
// `explore`: variants of the selected op cases, each judged as a case through a worker (core/explore.hpp).
int explore_command(const Config& cfg, const Registry& registry);

}  // namespace mpscheck::app
