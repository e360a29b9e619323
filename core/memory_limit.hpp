// The memory limit: the largest single tensor or buffer, in bytes, that dagrad allocates.
#pragma once

#include <cstdint>

namespace dagrad {

// A larger request raises dagrad::Error ResourceExhausted naming the op, the output and the byte
// count before anything is allocated, so an op whose output size comes from a few bytes of input
// cannot take the machine's memory first. The default is the machine's physical memory;
// set_memory_limit(0) restores it. Thread-safe; it applies to the whole process.
std::int64_t memory_limit();
void set_memory_limit(std::int64_t bytes);

// The machine's physical memory (sysconf), or INT64_MAX where it cannot be known.
std::int64_t physical_memory_bytes();

}  // namespace dagrad
