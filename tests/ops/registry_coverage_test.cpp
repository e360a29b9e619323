// Every registered op has a reference kernel on the CPU for every dtype its first type
// attribute allows (the kernel key); ops without a type attribute need the dtype-less kernel. The CPU
// backend serves half and bfloat16 wherever it serves float32.
#include <catch2/catch.hpp>

#include <algorithm>

#include <dagrad/dagrad.hpp>

using namespace dagrad;

TEST_CASE("every op has a reference kernel for every dtype it allows", "[registry]") {
  std::vector<std::string> missing;
  const auto ops = op_registry().list();
  REQUIRE(ops.size() >= 15);
  for (const OpDef* def : ops) {
    std::vector<DType> dtypes = def->kernel_dtypes();
    if (dtypes.empty()) dtypes = {DType::Invalid};  // no type attribute: the dtype-less kernel
    for (DType dtype : dtypes) {
      if (kernel_registry().find(def->name, Device::Kind::CPU, dtype, "reference") == nullptr) {
        missing.push_back(def->name + "/" + std::string(dtype_name(dtype)));
      }
    }
  }
  std::string list;
  for (const auto& m : missing) list += m + " ";
  INFO("ops without a reference kernel: " << list);
  CHECK(missing.empty());
}

TEST_CASE("every kernel belongs to a registered op and one of its dtypes", "[registry]") {
  std::vector<std::string> stray;
  for (const KernelDef* k : kernel_registry().list()) {
    const OpDef* def = op_registry().find(k->op);
    if (def == nullptr) {
      stray.push_back(k->op + " (no such op)");
      continue;
    }
    const AttrDef* key = nullptr;
    for (const auto& attr : def->attrs) {
      if (attr.kind == AttrKind::Type) {
        key = &attr;
        break;
      }
    }
    const bool ok = key == nullptr
                        ? k->dtype == DType::Invalid
                        : key->allowed_types.empty() || std::find(key->allowed_types.begin(), key->allowed_types.end(),
                                                                  k->dtype) != key->allowed_types.end();
    if (!ok) stray.push_back(k->op + "/" + std::string(dtype_name(k->dtype)) + " from " + k->backend);
  }
  std::string list;
  for (const auto& s : stray) list += s + " ";
  INFO("kernels no op can reach: " << list);
  CHECK(stray.empty());
}

// A float32 CPU kernel without its half/bfloat16 twins sends those dtypes to the slow reference
// kernels (training in bfloat16 would crawl); the CPU backend serves every float dtype an op allows.
TEST_CASE("every op with a CPU float32 kernel has CPU kernels for half and bfloat16", "[registry][half]") {
  std::vector<std::string> missing;
  for (const KernelDef* k : kernel_registry().list()) {
    if (k->backend != "cpu" || k->dtype != DType::Float32) continue;
    const OpDef* def = op_registry().find(k->op);
    REQUIRE(def != nullptr);
    for (DType dtype : {DType::Half, DType::BFloat16}) {
      bool allowed = false;
      for (const auto& attr : def->attrs) {
        if (attr.kind != AttrKind::Type) continue;
        allowed = attr.allowed_types.empty() ||
                  std::find(attr.allowed_types.begin(), attr.allowed_types.end(), dtype) != attr.allowed_types.end();
        break;
      }
      if (allowed && kernel_registry().find(k->op, Device::Kind::CPU, dtype, "cpu") == nullptr) {
        missing.push_back(k->op + "/" + std::string(dtype_name(dtype)));
      }
    }
  }
  std::string list;
  for (const auto& m : missing) list += m + " ";
  INFO("CPU kernels missing: " << list);
  CHECK(missing.empty());
}
