// register_all: the one list of every registration in the library. Explicit calls survive
// static linking, where self-registering static objects would be dropped by the linker.
#include "dagrad/backends/reference/register.hpp"
#include "dagrad/core/registries.hpp"
#include "dagrad/ops/register.hpp"

namespace dagrad {

void register_all(Registries& r) {
  ops::register_array_ops(r.ops);
  ops::register_math_ops(r.ops);
  ops::register_state_ops(r.ops);

  reference::register_array_kernels(r.kernels);
  reference::register_math_kernels(r.kernels);
  reference::register_state_kernels(r.kernels);
}

}  // namespace dagrad
