// Reference kernels: Add/AddV2/Sub/Mul (xtensor broadcasting), Neg, AddN, Sum, Mean.
// Floats are computed in double and rounded once; integers wrap modulo 2^n as TF's do.
#include <vector>

#include <xtensor/xbroadcast.hpp>

#include "dagrad/backends/reference/register.hpp"
#include "dagrad/core/tensor_xt.hpp"

namespace dagrad::reference {
namespace {

constexpr auto kCpu = Device::Kind::CPU;

// Wide type for exact reference arithmetic: double for floats, uint64 (modular) for integers.
template <class T>
using wide_t = std::conditional_t<is_floating_v<T>, double, std::uint64_t>;

template <class T>
wide_t<T> to_wide(T v) {
  if constexpr (is_floating_v<T>)
    return widen<T>(v);
  else
    return static_cast<std::uint64_t>(v);
}

template <class T>
T from_wide(wide_t<T> v) {
  if constexpr (is_floating_v<T>)
    return narrow<T>(v);
  else
    return static_cast<T>(v);
}

template <class T, class Op>
void binary(KernelContext& c, Op op) {
  const Tensor& x = c.input(0);
  const Tensor& y = c.input(1);
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;  // nothing to compute; an empty input's dims may overflow
  const auto shape = detail::xt_shape(out.shape());
  // xtensor broadcasts with numpy's rules, which are TF's.
  auto xs = xt::broadcast(host_view<T>(x), shape);
  auto ys = xt::broadcast(host_view<T>(y), shape);
  auto o = host_view<T>(out);
  auto xi = xs.begin();
  auto yi = ys.begin();
  for (auto oi = o.begin(); oi != o.end(); ++oi, ++xi, ++yi) {
    *oi = from_wide<T>(op(to_wide<T>(*xi), to_wide<T>(*yi)));
  }
}

template <class T>
void reduce(KernelContext& c, bool mean) {
  const Tensor& in = c.input(0);
  const auto mask = [&] {
    std::vector<bool> m(static_cast<std::size_t>(in.rank()), false);
    for (auto a : c.input(1).to_int64_vector()) m[static_cast<std::size_t>(a < 0 ? a + in.rank() : a)] = true;
    return m;
  }();
  Tensor& out = c.allocate_output(0);
  if (out.num_elements() == 0) return;  // nothing to compute; an empty input's dims may overflow
  // Elements per output (exact: the output is not empty), and output strides over the input's
  // axes: reduced axes contribute nothing; kept dims multiply to the output's size.
  const std::int64_t reduced_count = in.num_elements() / out.num_elements();
  std::vector<std::int64_t> out_stride(static_cast<std::size_t>(in.rank()), 0);
  std::int64_t stride = 1;
  for (int a = in.rank() - 1; a >= 0; --a) {
    if (mask[static_cast<std::size_t>(a)]) continue;
    out_stride[static_cast<std::size_t>(a)] = stride;
    stride *= in.shape()[a];
  }
  std::vector<wide_t<T>> acc(static_cast<std::size_t>(out.num_elements()), wide_t<T>(0));
  std::vector<std::int64_t> index(static_cast<std::size_t>(in.rank()), 0);
  const T* src = in.data<T>();
  for (std::int64_t i = 0; i < in.num_elements(); ++i) {
    std::int64_t o = 0;
    for (int a = 0; a < in.rank(); ++a)
      o += index[static_cast<std::size_t>(a)] * out_stride[static_cast<std::size_t>(a)];
    acc[static_cast<std::size_t>(o)] += to_wide<T>(src[i]);
    for (int a = in.rank() - 1; a >= 0; --a) {
      if (++index[static_cast<std::size_t>(a)] < in.shape()[a]) break;
      index[static_cast<std::size_t>(a)] = 0;
    }
  }
  T* dst = out.data<T>();
  for (std::size_t o = 0; o < acc.size(); ++o) {
    if (!mean) {
      dst[o] = from_wide<T>(acc[o]);
    } else if constexpr (is_floating_v<T>) {
      dst[o] = narrow<T>(acc[o] / static_cast<double>(reduced_count));  // 0/0 is NaN, as in TF
    } else {
      const auto total = static_cast<T>(acc[o]);
      dst[o] = reduced_count == 0 ? T(0) : static_cast<T>(total / static_cast<T>(reduced_count));
    }
  }
}

}  // namespace

void register_math_kernels(KernelRegistry& r) {
  for (const char* op : {"Add", "AddV2"}) {
    add_kernels(r, op, kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
      return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a + b; }); };
    });
  }
  add_kernels(r, "Sub", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a - b; }); };
  });
  add_kernels(r, "Mul", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) { binary<T>(c, [](auto a, auto b) { return a * b; }); };
  });
  add_kernels(r, "Neg", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      Tensor& out = c.allocate_output(0);
      T* y = out.data<T>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i) y[i] = from_wide<T>(wide_t<T>(0) - to_wide<T>(x[i]));
    };
  });
  add_kernels(r, "Reciprocal", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      const T* x = c.input(0).data<T>();
      Tensor& out = c.allocate_output(0);
      T* y = out.data<T>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i) {
        if constexpr (is_floating_v<T>) {
          y[i] = narrow<T>(1.0 / widen<T>(x[i]));
        } else {
          // Integer 1/x as TF computes it; 1/0 is an error rather than a crash.
          if (x[i] == 0) invalid_argument("Reciprocal: Integer division by zero");
          y[i] = static_cast<T>(T(1) / x[i]);
        }
      }
    };
  });
  add_kernels(r, "AddN", kCpu, kBackend, kPriority, kSchemaDTypes, []<class T>() -> KernelFn {
    return [](KernelContext& c) {
      Tensor& out = c.allocate_output(0);
      T* y = out.data<T>();
      for (std::int64_t i = 0; i < out.num_elements(); ++i) {
        wide_t<T> total = 0;
        for (int k = 0; k < c.num_inputs(); ++k) total += to_wide<T>(c.input(k).data<T>()[i]);
        y[i] = from_wide<T>(total);
      }
    };
  });
  add_kernels(r, "Sum", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce<T>(c, false); }; });
  add_kernels(r, "Mean", kCpu, kBackend, kPriority, kSchemaDTypes,
              []<class T>() -> KernelFn { return [](KernelContext& c) { reduce<T>(c, true); }; });
}

}  // namespace dagrad::reference
