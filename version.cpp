// The library's own version, compiled in: dagrad::version() answers for the library linked,
// whatever headers the caller was compiled with.
#include "dagrad/version.hpp"

namespace dagrad {

std::string Version::to_string() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

Version version() noexcept { return {DAGRAD_VERSION_MAJOR, DAGRAD_VERSION_MINOR, DAGRAD_VERSION_PATCH}; }

}  // namespace dagrad
