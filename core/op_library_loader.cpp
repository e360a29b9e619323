// load_op_library: dlopen a module made with DAGRAD_OP_LIBRARY and add its ops, all or none.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>

#include "dagrad/core/op_library.hpp"

namespace dagrad {
namespace {

using AbiFn = int (*)();
using FillFn = void (*)(OpLibrary&, Registries&);

std::string last_dl_error() {
  const char* text = dlerror();
  return text != nullptr ? text : "unknown reason";
}

// What the module asks of the loading program, for the errors of a module that did not load.
constexpr const char* kExportHint =
    " (an op library uses the dagrad of the program that loads it: build the module with "
    "dagrad::op_library, and the program with its dagrad symbols exported, as the dagrad CLI is)";

}  // namespace

void load_op_library(const std::string& path) {
  // Recursive: a module may load another while it fills its library.
  static std::recursive_mutex mutex;
  static std::set<void*> loaded;  // handles whose library was added; never unloaded (kernels live there)
  std::lock_guard lock(mutex);
  Registries& host = registries();
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    fail(Code::NotFound, "op library '", path, "': no such file", error ? str_cat(" (", error.message(), ")") : "");
  }
  if (!std::filesystem::is_regular_file(path, error)) invalid_argument("op library '", path, "': not a file");
  // A path without a slash would make dlopen search the library path: keep it relative to here.
  const std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const std::string reason = last_dl_error();
    const bool unresolved = reason.find("undefined symbol") != std::string::npos;
    invalid_argument("op library '", path, "': cannot load it: ", reason, unresolved ? kExportHint : "");
  }
  if (loaded.count(handle) != 0) {
    dlclose(handle);  // the reference this call took; the library is in the registries already
    return;
  }
  std::optional<Error> failure;
  bool filled = false;  // the module's fill function ran: it may have left anything behind
  {
    auto abi = reinterpret_cast<AbiFn>(dlsym(handle, "dagrad_op_library_abi"));
    auto fill = reinterpret_cast<FillFn>(dlsym(handle, "dagrad_op_library_fill"));
    if (abi == nullptr || fill == nullptr) {
      failure.emplace(Code::InvalidArgument,
                      str_cat("op library '", path,
                              "': not an op library (no dagrad_op_library_abi / dagrad_op_library_fill: "
                              "define them with DAGRAD_OP_LIBRARY)"));
    } else if (const int module_abi = abi(); module_abi != kOpLibraryAbi) {
      failure.emplace(Code::InvalidArgument, str_cat("op library '", path, "': built for op library ABI ", module_abi,
                                                     ", this dagrad has ", kOpLibraryAbi, ": rebuild it"));
    } else {
      OpLibrary library(path);
      try {
        filled = true;
        fill(library, host);
      } catch (const Error& e) {
        // Errors of OpLibrary and of the copy check name the library already.
        const bool named =
            std::string_view(e.what()).find(str_cat("op library '", path, "'")) != std::string_view::npos;
        failure.emplace(e.code(), named ? std::string(e.what()) : str_cat("op library '", path, "': ", e.what()));
      } catch (const std::exception& e) {
        failure.emplace(Code::Internal, str_cat("op library '", path, "': ", e.what()));
      } catch (...) {
        failure.emplace(Code::Internal, str_cat("op library '", path, "': an unknown exception"));
      }
      if (!failure) {
        try {
          library.add_to(host);  // its errors name the library already
        } catch (const Error& e) {
          failure.emplace(e);
        }
      }
    }
  }
  if (failure) {
    // A module whose fill ran stays loaded: nothing it made (an exception's type, a function it
    // registered behind OpLibrary's back) may outlive its code.
    if (!filled) dlclose(handle);
    throw *failure;
  }
  loaded.insert(handle);
}

}  // namespace dagrad
