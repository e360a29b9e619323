// register_gradients: the autodiff layer's one registration function, calling each family's.
#include "dagrad/autodiff/grads/register.hpp"

namespace dagrad::autodiff {

void register_gradients(GradientRegistry& r) {
  register_nn_gradients(r);
  register_array_gradients(r);
  register_math_gradients(r);
  register_shape_gradients(r);
  register_conv2d_gradients(r);
}

}  // namespace dagrad::autodiff
