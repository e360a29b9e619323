// `dagrad --version`: version first (scripts read the first line), then build and host facts.
#include "dagrad/tools/version_text.hpp"

#include <set>

#include "dagrad/backends/cpu/cpu_info.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/kernel_registry.hpp"
#include "dagrad/version.hpp"

namespace dagrad::cli {

std::string version_text() {
  std::string text = "dagrad " + version().to_string();
  // The library is the one linked (dagrad::version()); the headers are this program's.
  if (!library_matches_headers()) text += str_cat(" (built with headers of ", DAGRAD_VERSION_STRING, ")");
  std::set<std::string> backends;
  for (const KernelDef* k : kernel_registry().list()) backends.insert(k->backend);
  text += "\nbackends:";
  for (const std::string& b : backends) text += " " + b;
  text += "\ncpu: " + cpu::cpu_info().to_string();
#if defined(__clang__)
  text += str_cat("\ncompiler: clang ", __clang_version__);
#elif defined(__GNUC__)
  text += str_cat("\ncompiler: GCC ", __VERSION__);
#endif
  return text;
}

}  // namespace dagrad::cli
