// cpu_info: the features follow CPUID, the OS's saved state and the DAGRAD_MAX_CPU_ISA cap; the
// running CPU's view agrees with the compiler's own detection.
#include <catch2/catch.hpp>

#include <dagrad/dagrad.hpp>

#include "dagrad/backends/cpu/cpu_info.hpp"
#include "support/error_of.hpp"

using namespace dagrad;
using cpu::CpuidWords;
using cpu::CpuIsa;

namespace {

// A CPU with every feature, its state saved by the OS and the tile data granted.
CpuidWords everything() {
  CpuidWords w;
  w.leaf1_ecx = (1u << 12) | (1u << 27) | (1u << 29);                           // FMA, OSXSAVE, F16C
  w.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);  // AVX2, AVX-512 F DQ BW VL
  w.leaf7_edx = (1u << 22) | (1u << 23) | (1u << 24);                           // AMX-BF16, AVX512-FP16, AMX-TILE
  w.leaf7_1_eax = (1u << 5) | (1u << 21);                                       // AVX512-BF16, AMX-FP16
  w.xcr0 = 0x6 | 0xE0 | 0x60000;
  w.amx_permission = true;
  return w;
}

}  // namespace

TEST_CASE("cpu_info_from: each cap keeps exactly the levels at or below it", "[cpu][isa]") {
  const struct {
    CpuIsa cap;
    bool avx2, avx512, bf16, fp16, amx;
  } rows[] = {
      {CpuIsa::Portable, false, false, false, false, false}, {CpuIsa::Avx2, true, false, false, false, false},
      {CpuIsa::Avx512, true, true, false, false, false},     {CpuIsa::Avx512Bf16, true, true, true, false, false},
      {CpuIsa::Avx512Fp16, true, true, true, true, false},   {CpuIsa::Amx, true, true, true, true, true},
  };
  for (const auto& row : rows) {
    INFO("cap " << static_cast<int>(row.cap));
    const cpu::CpuInfo info = cpu::cpu_info_from(everything(), row.cap);
    CHECK(info.avx2_fma == row.avx2);
    CHECK(info.f16c == row.avx2);
    CHECK(info.avx512 == row.avx512);
    CHECK(info.avx512_bf16 == row.bf16);
    CHECK(info.avx512_fp16 == row.fp16);
    CHECK(info.amx_bf16 == row.amx);
    CHECK(info.amx_fp16 == row.amx);
    CHECK(info.max_isa == row.cap);
  }
}

TEST_CASE("cpu_info_from: a feature the OS does not save or grant is not usable", "[cpu][isa]") {
  CpuidWords no_zmm = everything();
  no_zmm.xcr0 = 0x6 | 0x60000;  // AVX state saved, AVX-512 state not
  const cpu::CpuInfo a = cpu::cpu_info_from(no_zmm, CpuIsa::Amx);
  CHECK(a.avx2_fma);
  CHECK_FALSE(a.avx512);
  CHECK_FALSE(a.avx512_bf16);
  CHECK_FALSE(a.amx_bf16);  // AMX kernels need AVX-512 around the tiles
  CHECK(a.max_isa == CpuIsa::Avx2);

  CpuidWords no_grant = everything();
  no_grant.amx_permission = false;  // Linux refused (or predates) the tile data request
  const cpu::CpuInfo b = cpu::cpu_info_from(no_grant, CpuIsa::Amx);
  CHECK(b.avx512_fp16);
  CHECK_FALSE(b.amx_bf16);
  CHECK(b.max_isa == CpuIsa::Avx512Fp16);

  CpuidWords no_osxsave = everything();
  no_osxsave.xcr0 = 0;
  CHECK(cpu::cpu_info_from(no_osxsave, CpuIsa::Amx).max_isa == CpuIsa::Portable);
  CHECK(cpu::cpu_info_from({}, CpuIsa::Amx).max_isa == CpuIsa::Portable);
}

TEST_CASE("DAGRAD_MAX_CPU_ISA names are parsed strictly", "[cpu][isa]") {
  CHECK(cpu::parse_cpu_isa("avx2") == CpuIsa::Avx2);
  CHECK(cpu::parse_cpu_isa("amx") == CpuIsa::Amx);
  CHECK_THAT(testing::error_of([] { cpu::parse_cpu_isa("AVX512"); }),
             Catch::Contains("DAGRAD_MAX_CPU_ISA: unknown ISA 'AVX512'; expected portable, avx2"));
}

TEST_CASE("the running CPU's view agrees with the compiler's detection", "[cpu][isa]") {
  const cpu::CpuInfo& info = cpu::cpu_info();
  INFO(info.to_string());
  CHECK(info.l1d_bytes > 0);
  CHECK(info.l2_bytes >= info.l1d_bytes);
  CHECK(info.l3_bytes > 0);
  CHECK(info.cores >= 1);
  CHECK(info.online_cpus >= info.cores);  // the affinity mask is a subset of the online CPUs
  CHECK(info.to_string().find(info.model + ":") == 0);
#if defined(__x86_64__)
  if (std::getenv("DAGRAD_MAX_CPU_ISA") == nullptr) {
    __builtin_cpu_init();
    CHECK(info.avx2_fma == (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")));
    CHECK(info.avx512 == (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")));
    CHECK(info.avx512_bf16 == (info.avx512 && __builtin_cpu_supports("avx512bf16")));
  }
#endif
}

TEST_CASE("parse_cache_size reads Linux's sysfs sizes and refuses anything else", "[cpu]") {
  CHECK(cpu::parse_cache_size("32768K") == std::int64_t{32} << 20);
  CHECK(cpu::parse_cache_size("1M") == std::int64_t{1} << 20);
  CHECK(cpu::parse_cache_size("2G") == std::int64_t{2} << 30);
  CHECK(cpu::parse_cache_size("512") == 512);
  CHECK(cpu::parse_cache_size("1024T") == 0);
  CHECK(cpu::parse_cache_size("K") == 0);
  CHECK(cpu::parse_cache_size("") == 0);
  CHECK(cpu::parse_cache_size("0K") == 0);
  CHECK(cpu::parse_cache_size("-4K") == 0);
  CHECK(cpu::parse_cache_size("32768 K") == 0);
  CHECK(cpu::parse_cache_size("1025G") == 0);                  // above 1 TiB
  CHECK(cpu::parse_cache_size("99999999999999999999K") == 0);  // beyond int64
  CHECK(cpu::parse_cache_size("9007199254740993K") == 0);      // would overflow the shift
}
