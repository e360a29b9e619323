// dagrad/version.hpp: the macros, the headers' Version and the library's version() agree, and
// the project's version (CMake's project(VERSION)) is what both say.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>
#include <dagrad/version.hpp>

using namespace dagrad;

TEST_CASE("version: the library's version is the headers'", "[version]") {
  const Version v = version();
  CHECK(v.major == DAGRAD_VERSION_MAJOR);
  CHECK(v.minor == DAGRAD_VERSION_MINOR);
  CHECK(v.patch == DAGRAD_VERSION_PATCH);
  CHECK(v.to_string() == DAGRAD_VERSION_STRING);
  CHECK(DAGRAD_VERSION == DAGRAD_VERSION_MAJOR * 10000 + DAGRAD_VERSION_MINOR * 100 + DAGRAD_VERSION_PATCH);
  CHECK(kHeaderVersion.to_string() == DAGRAD_VERSION_STRING);
  CHECK(library_matches_headers());
  CHECK(std::string(DAGRAD_VERSION_STRING) == DAGRAD_TEST_PROJECT_VERSION);
}
