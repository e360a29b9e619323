// Reads the CPU's features with CPUID and XGETBV, asks Linux for the AMX tile state, and the
// cache sizes from Linux's sysfs (glibc's sysconf where sysfs has none).
#include "dagrad/backends/cpu/cpu_info.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include <tbb/info.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#endif

#include "dagrad/core/error.hpp"

namespace dagrad::cpu {
namespace {

// CPUID bits (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E).
constexpr std::uint32_t kFmaEcx = 1u << 12, kF16cEcx = 1u << 29, kOsxsaveEcx = 1u << 27;
constexpr std::uint32_t kAvx2Ebx = 1u << 5, kAvx512fEbx = 1u << 16, kAvx512dqEbx = 1u << 17, kAvx512bwEbx = 1u << 30,
                        kAvx512vlEbx = 1u << 31;
constexpr std::uint32_t kAvx512Fp16Edx = 1u << 23, kAmxBf16Edx = 1u << 22, kAmxTileEdx = 1u << 24;
constexpr std::uint32_t kAvx512Bf16Eax = 1u << 5, kAmxFp16Eax = 1u << 21;
// XCR0: the register state the OS saves. AVX: SSE | YMM; AVX-512: also opmask, ZMM_Hi256,
// Hi16_ZMM; AMX: also XTILECFG and XTILEDATA.
constexpr std::uint64_t kXcr0Avx = 0x6, kXcr0Avx512 = 0xE0, kXcr0Amx = 0x60000;

bool all(std::uint32_t word, std::uint32_t bits) { return (word & bits) == bits; }

const std::map<std::string_view, CpuIsa>& isa_names() {
  static const std::map<std::string_view, CpuIsa> names = {
      {"portable", CpuIsa::Portable},      {"avx2", CpuIsa::Avx2},
      {"avx512", CpuIsa::Avx512},          {"avx512_bf16", CpuIsa::Avx512Bf16},
      {"avx512_fp16", CpuIsa::Avx512Fp16}, {"amx", CpuIsa::Amx}};
  return names;
}

#if defined(__x86_64__)
std::string brand_string() {
  std::array<std::uint32_t, 12> words{};
  unsigned max_leaf = __get_cpuid_max(0x80000000u, nullptr);
  if (max_leaf < 0x80000004u) return "unknown CPU";
  for (unsigned i = 0; i < 3; ++i)
    __get_cpuid(0x80000002u + i, &words[4 * i], &words[4 * i + 1], &words[4 * i + 2], &words[4 * i + 3]);
  char text[49] = {};
  std::memcpy(text, words.data(), 48);
  std::string model(text);
  model.erase(0, model.find_first_not_of(' '));
  model.erase(model.find_last_not_of(' ') + 1);
  return model.empty() ? "unknown CPU" : model;
}

CpuidWords read_cpuid() {
  CpuidWords w;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) w.leaf1_ecx = c;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    w.leaf7_ebx = b, w.leaf7_edx = d;
    __cpuid_count(7, 1, a, b, c, d);
    w.leaf7_1_eax = a;
  }
  if (all(w.leaf1_ecx, kOsxsaveEcx)) {
    std::uint32_t lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w.xcr0 = (std::uint64_t{hi} << 32) | lo;
  }
  if (all(w.leaf7_edx, kAmxTileEdx) && (w.xcr0 & kXcr0Amx) == kXcr0Amx) {
    // Linux (5.16+) hands out the tile data state only on request (arch_prctl ARCH_REQ_XCOMP_PERM
    // for XFEATURE_XTILEDATA, 18); without the grant the first tile instruction faults.
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    w.amx_permission = syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  }
  return w;
}
#endif

// The size of one instance of CPU 0's data or unified cache of `level`, as Linux reads it from
// the CPU (CPUID's cache leaves), then as glibc's sysconf `name` gives it, else `fallback`. sysfs
// first: on a Zen 4 virtual machine sysconf gave 320 MiB of L3, sysfs the 32 MiB that one core
// can reach, and the first layers' choice of warming their output rows reads the L3 size.
std::int64_t cache_bytes(int level, int name, std::int64_t fallback) {
  for (int index = 0; index < 16; ++index) {
    const std::string dir = str_cat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
    int cache_level = 0;
    std::string type, size;
    if (!(level_file >> cache_level)) break;  // no more caches (or no sysfs)
    if (cache_level != level || !(type_file >> type) || type == "Instruction" || !(size_file >> size)) continue;
    if (const std::int64_t bytes = parse_cache_size(size); bytes > 0) return bytes;
  }
  const long bytes = sysconf(name);
  return bytes > 0 ? bytes : fallback;
}

CpuIsa cap_from_environment() {
  const char* value = std::getenv("DAGRAD_MAX_CPU_ISA");
  return value == nullptr || *value == '\0' ? CpuIsa::Amx : parse_cpu_isa(value);
}

}  // namespace

CpuIsa parse_cpu_isa(std::string_view name) {
  const auto it = isa_names().find(name);
  if (it == isa_names().end())
    invalid_argument("DAGRAD_MAX_CPU_ISA: unknown ISA '", name,
                     "'; expected portable, avx2, avx512, avx512_bf16, avx512_fp16 or amx");
  return it->second;
}

std::int64_t parse_cache_size(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [rest, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc{} || value <= 0) return 0;
  const std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  const std::pair<std::string_view, int> shifts[] = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}};
  for (const auto& [suffix, shift] : shifts)
    if (unit == suffix) return value <= (std::int64_t{1} << (40 - shift)) ? value << shift : 0;
  return 0;
}

CpuInfo cpu_info_from(const CpuidWords& w, CpuIsa cap) {
  CpuInfo info;
  const bool os_avx = (w.xcr0 & kXcr0Avx) == kXcr0Avx, os_avx512 = os_avx && (w.xcr0 & kXcr0Avx512) == kXcr0Avx512;
  const auto allowed = [cap](CpuIsa level) { return level <= cap; };
  info.avx2_fma = allowed(CpuIsa::Avx2) && os_avx && all(w.leaf7_ebx, kAvx2Ebx) && all(w.leaf1_ecx, kFmaEcx);
  info.f16c = info.avx2_fma && all(w.leaf1_ecx, kF16cEcx);
  info.avx512 = allowed(CpuIsa::Avx512) && info.avx2_fma && os_avx512 &&
                all(w.leaf7_ebx, kAvx512fEbx | kAvx512dqEbx | kAvx512bwEbx | kAvx512vlEbx);
  info.avx512_bf16 = allowed(CpuIsa::Avx512Bf16) && info.avx512 && all(w.leaf7_1_eax, kAvx512Bf16Eax);
  info.avx512_fp16 = allowed(CpuIsa::Avx512Fp16) && info.avx512 && all(w.leaf7_edx, kAvx512Fp16Edx);
  const bool tiles = allowed(CpuIsa::Amx) && info.avx512 && all(w.leaf7_edx, kAmxTileEdx) &&
                     (w.xcr0 & kXcr0Amx) == kXcr0Amx && w.amx_permission;
  info.amx_bf16 = tiles && all(w.leaf7_edx, kAmxBf16Edx);
  info.amx_fp16 = tiles && all(w.leaf7_1_eax, kAmxFp16Eax);
  const std::pair<bool, CpuIsa> levels[] = {{info.amx_bf16, CpuIsa::Amx},
                                            {info.avx512_fp16, CpuIsa::Avx512Fp16},
                                            {info.avx512_bf16, CpuIsa::Avx512Bf16},
                                            {info.avx512, CpuIsa::Avx512},
                                            {info.avx2_fma, CpuIsa::Avx2}};
  for (const auto& [usable, level] : levels) {
    if (usable) {
      info.max_isa = level;
      break;
    }
  }
  return info;
}

std::string CpuInfo::to_string() const {
  std::string text = model + ":";
  const std::pair<bool, const char*> features[] = {
      {avx2_fma, "avx2_fma"},       {f16c, "f16c"},         {avx512, "avx512"},    {avx512_bf16, "avx512_bf16"},
      {avx512_fp16, "avx512_fp16"}, {amx_bf16, "amx_bf16"}, {amx_fp16, "amx_fp16"}};
  bool any = false;
  for (const auto& [usable, name] : features) {
    if (!usable) continue;
    text += std::string(" ") + name;
    any = true;
  }
  if (!any) text += " portable only";
  return str_cat(text, "; L1d ", l1d_bytes / 1024, " KiB, L2 ", l2_bytes / 1024, " KiB, L3 ", l3_bytes / 1024, " KiB; ",
                 cores, cores == 1 ? " core" : " cores");
}

const CpuInfo& cpu_info() {
  static const CpuInfo info = [] {
#if defined(__x86_64__)
    CpuInfo i = cpu_info_from(read_cpuid(), cap_from_environment());
    i.model = brand_string();
#else
    CpuInfo i = cpu_info_from({}, cap_from_environment());
    i.model = "unknown CPU";
#endif
    // Typical sizes where the C library cannot tell (some virtual machines).
    i.l1d_bytes = cache_bytes(1, _SC_LEVEL1_DCACHE_SIZE, 32 << 10);
    i.l2_bytes = cache_bytes(2, _SC_LEVEL2_CACHE_SIZE, 1 << 20);
    i.l3_bytes = cache_bytes(3, _SC_LEVEL3_CACHE_SIZE, 8 << 20);
    i.cores = std::max(1, tbb::info::default_concurrency());  // the CPUs this process may use
    i.online_cpus = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
    return i;
  }();
  return info;
}

}  // namespace dagrad::cpu
