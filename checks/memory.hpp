// The memory rule: a case whose target run needs more memory than the device recommends is a
// `memory` finding, and so is one the device refused for want of memory. No LibTorch in here.
#pragma once

#include "checks/result.hpp"

#include <cstdint>
#include <string>

namespace mpscheck {

// "1.50 GiB", "312 KiB", "17 B": a byte count as people read it.
std::string bytes_text(std::int64_t bytes);

// Whether a target's exception says it ran out of memory (MPS's and the sim's "backend out of
// memory", CUDA's "CUDA out of memory", the CPU allocator's "not enough memory").
bool is_out_of_memory(const std::string& message);

// Turns a `pass` (or `fallback`) whose peak allocated memory is over the device's recommended
// maximum into `memory`, with a message that gives both figures ("needs 2.10 GiB of the 1.50 GiB
// the device recommends"). A target that ran out of memory is `memory` already (classify_exception);
// its message gains the recommended maximum where one is known. A case with a worse finding keeps it.
void judge_memory(CaseResult& r);

// "peak 1.20 MiB allocated (counter), driver 2.00 MiB, process 312 MiB, recommended max 1.50 GiB";
// empty without figures.
std::string memory_text(const MemoryFigures& m);

}  // namespace mpscheck
