// An allocation the system refuses is a dagrad::Error (ResourceExhausted) naming the op and the
// node, never std::bad_alloc or a crash. A program of its own, outside the unit tests, so that every
// build runs it (the CI's Release stage builds no unit tests); AddressSanitizer aborts on such a
// request by design (allocator_may_return_null=0), so there it reports a skip (exit 77).
#include <cstdint>
#include <iostream>
#include <limits>
#include <string>

#include <dagrad/dagrad.hpp>

#if defined(__SANITIZE_ADDRESS__)
#define DAGRAD_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DAGRAD_UNDER_ASAN 1
#endif
#endif

#ifndef DAGRAD_UNDER_ASAN
namespace {

// The error text of `fn`'s dagrad::Error with code ResourceExhausted, or what happened instead.
template <class F>
std::string resource_exhausted(F fn) {
  try {
    fn();
    return "no error";
  } catch (const dagrad::Error& e) {
    return e.code() == dagrad::Code::ResourceExhausted ? e.what() : "another code: " + std::string(e.what());
  }
}

bool expect(const std::string& what, const std::string& text, const std::string& fragment) {
  if (text.find(fragment) != std::string::npos) return true;
  std::cerr << what << ": expected '" << fragment << "' in: " << text << "\n";
  return false;
}

}  // namespace
#endif

int main() {
#ifdef DAGRAD_UNDER_ASAN
  std::cout << "skipped under AddressSanitizer, which aborts on a 256 TiB request instead of returning null\n";
  return 77;
#else
  using namespace dagrad;
  set_memory_limit(std::numeric_limits<std::int64_t>::max());  // only the system says no
  // 256 TiB: more than x86-64's user address space, whatever the overcommit policy.
  const std::int64_t elements = std::int64_t{1} << 46;
  const std::string op = resource_exhausted([&] {
    run_op("BroadcastTo", {Tensor::scalar<float>(1.f), Tensor::from_values<std::int64_t>(Shape{1}, {elements})}, {},
           {.name = "vast"});
  });
  const std::string tensor = resource_exhausted([&] { Tensor::empty(DType::Float32, Shape{elements}); });
  const bool ok = expect("run_op", op, "BroadcastTo") && expect("run_op", op, "out of host memory") &&
                  expect("run_op", op, "(node 'vast')") &&
                  expect("Tensor::empty", tensor, "out of host memory allocating 281474976710656 bytes");
  std::cout << (ok ? "ok: " : "FAILED: ") << op << "\n";
  return ok ? 0 : 1;
#endif
}
