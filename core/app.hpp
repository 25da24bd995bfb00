#pragma once
namespace mpscheck {
// The whole command-line program; returns the exit code (0 ok, 1 findings, 2 bad usage or
// input, 3 target unavailable, 130 interrupted).
int run_mpscheck(int argc, char** argv);
}  // namespace mpscheck
