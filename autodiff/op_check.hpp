// check_ops: every op case (OpDef::cases) on every backend of a device and every dtype: each
// kernel against the reference kernel (the same bits on 1 thread and on all cores, within a per-dtype
// tolerance of the reference), and finite-difference gradient checks of order 1 and 2 on the
// reference kernels and on the device's own. `dagrad check` prints the report; the case-table
// tests assert it. Works for any registered op with cases, a user's custom ops included.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dagrad/autodiff/gradient_checker.hpp"
#include "dagrad/core/device.hpp"
#include "dagrad/core/kernel_registry.hpp"

namespace dagrad {

struct OpCheckOptions {
  std::vector<std::string> ops;  // empty: every registered op that has cases
  // Shard `shard` of `shards` (from 1): every shards-th op of the list, so that parallel runs
  // share the table.
  int shard = 1, shards = 1;
  Device device = Device::cpu();  // where the backends' kernels run (the reference runs on the host)
  std::vector<DType> dtypes;      // empty: each case's own dtypes
  int max_order = 2;      // the highest gradient order checked (a case may ask for less; order 2 in float64 only)
  bool forward = true;    // false: the gradient checks only
  bool gradients = true;  // false: the forward checks only
  // Fast: random directional derivatives (a few runs per input); Full: whole Jacobians (two runs
  // per input element), stronger and slower.
  GradCheckMode mode = GradCheckMode::Fast;
};

enum class CheckStatus { Pass, Fail, Skip };
enum class CheckKind { Forward, Gradient, SecondOrder };
std::string_view check_status_name(CheckStatus status);  // "PASS", "FAIL", "SKIP"
std::string_view check_kind_name(CheckKind kind);        // "forward", "gradient", "second order"

struct OpCheckRow {
  std::string op;
  std::string case_label;
  std::string backend;  // the kernels checked: "cpu", "cuda", "cudnn"; "reference" for gradients
  Device device;
  DType dtype = DType::Invalid;
  CheckKind check = CheckKind::Forward;
  CheckStatus status = CheckStatus::Skip;
  // Forward: the largest difference from the reference relative to the reference's largest
  // magnitude; gradients: the worst entry's error over its tolerance's scale (see GradCheckResult).
  double error = 0;
  double tolerance = 0;
  std::string message;  // why it failed or was skipped
};

struct OpCheckReport {
  std::vector<OpCheckRow> rows;
  std::vector<const KernelDef*> kernels_run;  // every kernel a forward check ran (reference included)

  bool passed() const;  // no row failed
  // One line per (op, backend, dtype) with the worst forward, gradient and second-order result,
  // then each failure's message and a closing "N passed, N failed, N skipped" line.
  std::string table() const;
  std::string json() const;  // one line: {"passed": bool, "rows": [{...}, ...]}
};

// Throws NotFound for an unknown op in `options.ops`, InvalidArgument for one without cases.
OpCheckReport check_ops(const OpCheckOptions& options = {});

}  // namespace dagrad
