// A test module that claims an op library ABI this dagrad does not have: refused before its
// fill function runs (which would fail the test by throwing).
#include <stdexcept>

namespace dagrad {
class OpLibrary;
struct Registries;
}  // namespace dagrad

extern "C" int dagrad_op_library_abi() { return 999; }
extern "C" void dagrad_op_library_fill(dagrad::OpLibrary&, dagrad::Registries&) {
  throw std::logic_error("the fill function of a module with another ABI ran");
}
