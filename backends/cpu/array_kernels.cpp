// CPU kernels for ZerosLike, OnesLike and Cast: the reference's element rules, split over fixed
// blocks with tbb::parallel_for (elementwise, so any split gives the same bits). Casts between
// float32 and half/bfloat16 (mixed-precision training casts every weight and gradient) take the
// vectorised conversions of convert.hpp, bitwise equal to the element rule.
#include <algorithm>
#include <type_traits>

#include <tbb/parallel_for.h>

#include "dagrad/backends/cpu/convert.hpp"
#include "dagrad/backends/cpu/register.hpp"
#include "dagrad/core/tensor.hpp"

namespace dagrad::cpu {
namespace {

using i64 = std::int64_t;
constexpr auto kCpu = Device::Kind::CPU;
constexpr i64 kBlock = 32768;

template <class F>
void blocks(i64 n, F&& body) {
  tbb::parallel_for(i64{0}, (n + kBlock - 1) / kBlock, [&](i64 b) { body(b * kBlock, std::min(n, (b + 1) * kBlock)); });
}

template <class T>
void fill(KernelContext& c, double value) {
  Tensor& out = c.allocate_output(0);
  const T v = cast_value<T>(value);
  T* y = out.data<T>();
  blocks(out.num_elements(), [&](i64 b, i64 e) { std::fill(y + b, y + e, v); });
}

}  // namespace

void register_array_kernels(KernelRegistry& r) {
  add_kernels(r, "ZerosLike", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { fill<T>(c, 0.0); }; });
  add_kernels(r, "OnesLike", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { fill<T>(c, 1.0); }; });
  add_kernels(r, "Cast", kCpu, kBackend, kPriority, kSchemaDTypes, []<class S>() -> KernelFn {
    return [](KernelContext& c) {
      const Tensor& in = c.input(0);
      Tensor& out = c.allocate_output(0);
      visit_dtype(out.dtype(), [&]<class D>() {
        const S* src = in.data<S>();
        D* dst = out.data<D>();
        if constexpr (std::is_same_v<S, float> && is_reduced_float_v<D>) {
          return convert_from_float(src, dst, in.num_elements());
        } else if constexpr (is_reduced_float_v<S> && std::is_same_v<D, float>) {
          return convert_to_float(src, dst, in.num_elements());
        }
        blocks(in.num_elements(), [&](i64 b, i64 e) {
          for (i64 i = b; i < e; ++i) dst[i] = cast_value<D, S>(src[i]);
        });
      });
    };
  });
}

}  // namespace dagrad::cpu
