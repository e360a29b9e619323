// What `dagrad --version` prints: the library's version and the facts of this build and host
// that a bug report needs.
#pragma once

#include <string>

namespace dagrad::cli {

// "dagrad 0.1.0" and lines for the backends compiled in, the CPU's usable ISA extensions and the
// compiler, without a trailing newline.
std::string version_text();

}  // namespace dagrad::cli
