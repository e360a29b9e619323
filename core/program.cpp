// run_main: the one place where a dagrad program turns failures into an exit status.
#include "dagrad/core/program.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>

#include "dagrad/core/error.hpp"

namespace dagrad {
namespace {

// A result that did not reach standard output is a failure, whatever printed it.
int checked_stdout(int status) {
  errno = 0;
  std::cout.flush();
  if (std::cout && std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  const int error = errno;
  const std::string reason = error ? std::string(": ") + std::strerror(error) : "";
  std::cerr << "error: cannot write to standard output" << reason << "\n";
  return status == kExitSuccess ? kExitError : status;
}

}  // namespace

int run_main(const std::function<int()>& body) noexcept {
  try {
    try {
      return checked_stdout(body());
    } catch (const Error& e) {
      std::cerr << "error: " << e.what() << "\n";
    } catch (const std::bad_alloc&) {
      std::cerr << "error: out of memory\n";
    } catch (const std::exception& e) {
      std::cerr << "error: internal error: " << e.what() << "\n";
    } catch (...) {
      std::cerr << "error: internal error: unknown exception\n";
    }
  } catch (...) {  // writing the message itself failed
  }
  return kExitError;
}

}  // namespace dagrad
