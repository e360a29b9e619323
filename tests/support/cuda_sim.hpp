// Runs CUDA kernel source on the host, so that the CPU test suite executes the very kernels the
// CUDA backend launches (the kernel headers and .cu files, whose launches go through
// DAGRAD_LAUNCH), not a re-implementation of them.
//
// The model: the blocks of a launch run one after another, first to last on one launch of a
// kernel and last to first on its next, so a block that writes into another's part of the
// output, or reads what another block of the same launch writes, gives a wrong result in one
// order or the other, as it would on a GPU that schedules blocks in any order. The threads of a
// block are fibers (ucontext) on the calling thread, switched at __syncthreads() and
// __syncwarp(), which release their fibers only when every live thread of the block (or warp)
// has arrived; between barriers the threads run in turn, in alternating order. So a missing
// barrier, or a wrong thread-to-element mapping, gives wrong results here as on a GPU, and
// threads stuck at different barriers are reported instead of hanging. __shared__ variables
// become function-local statics: one copy, reused by each block in turn. nvcuda::wmma is
// emulated on whole 16x16 tiles held by lane 0 of each warp (a real fragment's layout is opaque).
// Misaligned vector and wmma accesses, which fault or misbehave on a GPU, and barrier deadlocks
// are counted in cuda_sim::violations().
//
// Include this header before any CUDA header or kernel header, in a file compiled by the host
// compiler (never by nvcc). Not thread-safe: one launch at a time.
#pragma once

#if defined(__CUDACC__)
#error "cuda_sim.hpp is for host compilation only"
#endif

// The CUDA headers keep definitions made before them (crt/host_defines.h).
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __grid_constant__
#define DAGRAD_CUDA_SIM 1

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <vector_types.h>

#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <type_traits>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#define __launch_bounds__(...)

namespace cuda_sim {

inline uint3 thread_idx, block_idx;
inline dim3 block_dim, grid_dim;
inline unsigned lane_id = 0;

inline std::atomic<long>& violations() {
  static std::atomic<long> count{0};
  return count;
}
inline void require_aligned(const void* p, std::size_t alignment) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignment != 0) ++violations();
}

// The threads of the running block and the scheduler that switches between them.
class Block {
 public:
  enum class State { Ready, AtBlockBarrier, AtWarpBarrier, Done };

  Block(unsigned threads, std::function<void()> body) : body_(std::move(body)), fibers_(threads) {
    static std::vector<std::unique_ptr<char[]>> stacks;  // kept across launches: no mmap per launch
    while (stacks.size() < threads) stacks.push_back(std::make_unique<char[]>(kStackBytes));
    for (unsigned t = 0; t < threads; ++t) fibers_[t].stack = stacks[t].get();
  }

  // Runs every thread of the current block to completion.
  void run() {
    for (Fiber& f : fibers_) start(f);
    // Between barriers the threads run in turn, first to last, then last to first after the
    // next barrier: a read that a missing barrier leaves unordered after a write by another
    // thread then sees stale data in one direction or the other.
    for (bool forward = true;; forward = !forward) {
      const unsigned n = static_cast<unsigned>(fibers_.size());
      for (unsigned i = 0; i < n; ++i) {
        const unsigned t = forward ? i : n - 1 - i;
        if (fibers_[t].state == State::Ready) resume(t);
      }
      if (!release_barriers()) return;
    }
  }

  static Block*& current() {
    static Block* block = nullptr;
    return block;
  }
  void wait(State at) {
    fibers_[running_].state = at;
    switch_to(&fibers_[running_].context, &scheduler_, scheduler_stack_, scheduler_stack_size_);
  }

 private:
  static constexpr std::size_t kStackBytes = 256 * 1024;
  struct Fiber {
    ucontext_t context;
    char* stack = nullptr;
    State state = State::Ready;
  };

  // Not inlined into run(): getcontext returns twice, which would clobber run()'s locals.
  [[gnu::noinline]] void start(Fiber& f) {
    f.state = State::Ready;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = &scheduler_;
    makecontext(&f.context, &Block::entry, 0);
  }

  static void entry() {
    Block& b = *current();
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack_, &b.scheduler_stack_size_);
#endif
    b.body_();
    b.fibers_[b.running_].state = State::Done;
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(nullptr, b.scheduler_stack_, b.scheduler_stack_size_);  // the fiber ends
#endif
  }  // returns to uc_link, the scheduler

  void resume(unsigned t) {
    running_ = t;
    thread_idx = uint3{t % block_dim.x, (t / block_dim.x) % block_dim.y, t / (block_dim.x * block_dim.y)};
    lane_id = t % 32;
    switch_to(&scheduler_, &fibers_[t].context, fibers_[t].stack, kStackBytes);
  }

  void switch_to(ucontext_t* from, ucontext_t* to, const void* to_stack, std::size_t to_size) {
#if defined(__SANITIZE_ADDRESS__)
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, to_stack, to_size);
    swapcontext(from, to);
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#else
    (void)to_stack, (void)to_size;
    swapcontext(from, to);
#endif
  }

  // Once no thread can run: frees each warp whose live lanes all wait at __syncwarp, else the
  // block if all live threads wait at __syncthreads. False when every thread is done, or on a
  // deadlock (threads at different barriers), which is counted as a violation.
  bool release_barriers() {
    bool released = false, all_done = true;
    for (unsigned w = 0; w * 32 < fibers_.size(); ++w) {
      const unsigned end = std::min<unsigned>(static_cast<unsigned>(fibers_.size()), (w + 1) * 32);
      bool all_at_warp = true, any_at_warp = false;
      for (unsigned t = w * 32; t < end; ++t) {
        any_at_warp |= fibers_[t].state == State::AtWarpBarrier;
        all_at_warp &= fibers_[t].state == State::AtWarpBarrier || fibers_[t].state == State::Done;
      }
      if (any_at_warp && all_at_warp) {
        for (unsigned t = w * 32; t < end; ++t) {
          if (fibers_[t].state == State::AtWarpBarrier) fibers_[t].state = State::Ready;
        }
        released = true;
      }
    }
    if (released) return true;
    bool all_at_block = true, any_at_block = false;
    for (const Fiber& f : fibers_) {
      all_done &= f.state == State::Done;
      any_at_block |= f.state == State::AtBlockBarrier;
      all_at_block &= f.state == State::AtBlockBarrier || f.state == State::Done;
    }
    if (all_done) return false;
    if (any_at_block && all_at_block) {
      for (Fiber& f : fibers_) {
        if (f.state == State::AtBlockBarrier) f.state = State::Ready;
      }
      return true;
    }
    ++violations();  // deadlock: the block is abandoned (its fibers' stacks are simply dropped)
    return false;
  }

  std::function<void()> body_;
  std::vector<Fiber> fibers_;
  ucontext_t scheduler_;
  unsigned running_ = 0;
  const void* scheduler_stack_ = nullptr;
  std::size_t scheduler_stack_size_ = 0;
};

inline void sync_threads() { Block::current()->wait(Block::State::AtBlockBarrier); }
inline void sync_warp() { Block::current()->wait(Block::State::AtWarpBarrier); }

// kernel(): one call per thread per block, with the CUDA indices set. `key` names the kernel
// (its address): each kernel's launches alternate the block order.
template <class Kernel>
void launch(dim3 grid, dim3 block, Kernel&& kernel, const void* key = nullptr) {
  block_dim = block;
  grid_dim = grid;
  Block threads(block.x * block.y * block.z, [&] { kernel(); });
  Block::current() = &threads;
  static std::map<const void*, bool> reversed;  // per kernel: whether its next launch runs reversed
  const bool reverse = reversed[key];
  reversed[key] = !reverse;
  const std::uint64_t blocks = std::uint64_t{grid.x} * grid.y * grid.z;
  for (std::uint64_t i = 0; i < blocks; ++i) {
    const std::uint64_t b = reverse ? blocks - 1 - i : i;
    block_idx = uint3{static_cast<unsigned>(b % grid.x), static_cast<unsigned>(b / grid.x % grid.y),
                      static_cast<unsigned>(b / (std::uint64_t{grid.x} * grid.y))};
    threads.run();
  }
  Block::current() = nullptr;
}

// DAGRAD_LAUNCH(grid, block, stream, kernel)(args...) (device_types.cuh) on the simulator.
template <class... Params>
auto launcher(void (*kernel)(Params...), dim3 grid, dim3 block) {
  return [=](const auto&... args) {
    launch(
        grid, block, [&] { kernel(args...); }, reinterpret_cast<const void*>(kernel));
  };
}

}  // namespace cuda_sim

#define DAGRAD_LAUNCH(grid, block, stream, ...) \
  ((void)(stream), ::cuda_sim::launcher(__VA_ARGS__, dim3(grid), dim3(block)))

#define threadIdx ::cuda_sim::thread_idx
#define blockIdx ::cuda_sim::block_idx
#define blockDim ::cuda_sim::block_dim
#define gridDim ::cuda_sim::grid_dim
#define __syncthreads() ::cuda_sim::sync_threads()
#define __syncwarp(...) ::cuda_sim::sync_warp()

// The device math the kernels call unqualified, in float as on the device.
using std::fma;
// The explicitly rounded operations (never contracted into an FMA); the host compiler does not
// contract across these calls either (ISO C++ mode: -ffp-contract=off).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __dsqrt_rn(double a) { return std::sqrt(a); }

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int rows = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int cols = std::is_same_v<Use, matrix_a> ? K : N;
  T v[rows * cols] = {};  // the logical tile, row-major; only lane 0's copy is used
  T& at(int r, int c) { return v[r * cols + c]; }
  const T& at(int r, int c) const { return v[r * cols + c]; }
};

template <class Use, int M, int N, int K, class T, class Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout>& f, T value) {
  for (T& x : f.v) x = value;
}

// wmma requires 256-bit aligned pointers and a leading dimension of a multiple of 16 bytes.
template <class T>
void check_wmma_pointer(const T* p, unsigned ld) {
  cuda_sim::require_aligned(p, 32);
  if ((ld * sizeof(T)) % 16 != 0) ++cuda_sim::violations();
}

template <class Use, int M, int N, int K, class T, class Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const T* p, unsigned ld) {
  check_wmma_pointer(p, ld);
  if (cuda_sim::lane_id != 0) return;
  using F = fragment<Use, M, N, K, T, Layout>;
  for (int r = 0; r < F::rows; ++r) {
    for (int c = 0; c < F::cols; ++c) f.at(r, c) = std::is_same_v<Layout, col_major> ? p[c * ld + r] : p[r * ld + c];
  }
}

template <int M, int N, int K, class T, class LA, class LB>
void mma_sync(fragment<accumulator, M, N, K, float>& d, const fragment<matrix_a, M, N, K, T, LA>& a,
              const fragment<matrix_b, M, N, K, T, LB>& b, const fragment<accumulator, M, N, K, float>& c) {
  if (cuda_sim::lane_id != 0) return;
  fragment<accumulator, M, N, K, float> sum;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float s = c.at(i, j);
      for (int k = 0; k < K; ++k) s += static_cast<float>(a.at(i, k)) * static_cast<float>(b.at(k, j));
      sum.at(i, j) = s;
    }
  }
  d = sum;
}

template <int M, int N, int K>
void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f, unsigned ld, layout_t layout) {
  check_wmma_pointer(p, ld);
  if (cuda_sim::lane_id != 0) return;
  for (int r = 0; r < M; ++r) {
    for (int c = 0; c < N; ++c) (layout == mem_row_major ? p[r * ld + c] : p[c * ld + r]) = f.at(r, c);
  }
}

}  // namespace nvcuda::wmma
