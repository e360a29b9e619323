// What the running CPU offers the kernels: its ISA extensions (as CPUID reports them and the OS
// saves their registers), cache sizes and core count, read once. Every run-time choice of a
// micro-kernel table or a blocking reads it, so that the choice follows the host, not the CPU the
// kernels were tuned on. DAGRAD_MAX_CPU_ISA (portable, avx2, avx512, avx512_bf16, avx512_fp16,
// amx) caps the ISA, as oneDNN's ONEDNN_MAX_CPU_ISA does: narrower paths run and are measured on a
// wide CPU.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dagrad::cpu {

// ISA levels in the order in which CPUs add them; each level's features imply the ones below.
enum class CpuIsa { Portable, Avx2, Avx512, Avx512Bf16, Avx512Fp16, Amx };

struct CpuInfo {
  std::string model;  // CPUID's brand string
  // Features usable here: present, saved by the OS, and within the DAGRAD_MAX_CPU_ISA cap.
  bool avx2_fma = false;              // AVX2 and FMA3
  bool f16c = false;                  // half <-> float conversions (with AVX2)
  bool avx512 = false;                // AVX-512 F, BW, VL, DQ
  bool avx512_bf16 = false;           // vdpbf16ps
  bool avx512_fp16 = false;           // half arithmetic
  bool amx_bf16 = false;              // AMX tiles with bfloat16 products; the OS granted tile data to this process
  bool amx_fp16 = false;              // the same with half products
  CpuIsa max_isa = CpuIsa::Portable;  // the widest level usable
  std::int64_t l1d_bytes = 0;         // per core
  std::int64_t l2_bytes = 0;          // per core
  std::int64_t l3_bytes = 0;          // shared
  int cores = 1;                      // hardware threads this process may use (its affinity mask)
  // Hardware threads online, whatever this process's affinity: blockings that fix summation orders
  // read this one, so that bits do not change with a thread count or a CPU mask.
  long online_cpus = 1;

  // "MODEL: avx2_fma f16c avx512 ...; L1d 48 KiB, L2 1024 KiB, L3 32768 KiB; 2 cores".
  std::string to_string() const;
};

const CpuInfo& cpu_info();

// For tests: the CpuInfo that CPUID words would give under a cap, without touching the machine.
struct CpuidWords {
  std::uint32_t leaf1_ecx = 0, leaf7_ebx = 0, leaf7_edx = 0, leaf7_1_eax = 0;
  std::uint64_t xcr0 = 0;
  bool amx_permission = false;  // the OS granted tile data (Linux: arch_prctl)
};
CpuInfo cpu_info_from(const CpuidWords& words, CpuIsa cap);
// A cache size as Linux writes it in /sys/devices/system/cpu/cpuN/cache/indexM/size ("32768K",
// "1M", "512"), in bytes; 0 for anything else, or above 1 TiB.
std::int64_t parse_cache_size(std::string_view text);
// A DAGRAD_MAX_CPU_ISA value; throws InvalidArgument naming the variable and the accepted names.
CpuIsa parse_cpu_isa(std::string_view name);

}  // namespace dagrad::cpu
