// The ops without a typed raw op and why: each needs what only a graph and its Session have.
#include "dagrad/ops/raw_op_attrs.hpp"

namespace dagrad::raw_ops {

const std::vector<OpWithoutRawOp>& ops_without_raw_op() {
  static const std::vector<OpWithoutRawOp> ops = {
      {"Placeholder", "a value fed to a Session run; eagerly, pass the tensor itself"},
      {"VariableV2", "a variable lives in a Session (stateful; tf.raw_ops refuses it eagerly too)"},
      {"Assign", "writes a Session's variable through a ref input (TF: 'Arg ref is a ref' in eager mode)"},
      {"ApplyGradientDescent", "updates a Session's variable in place through a ref input"},
      {"ApplyMomentum", "updates a Session's variables in place through ref inputs"},
      {"ApplyAdam", "updates a Session's variables in place through ref inputs"},
      {"CollectiveReduceShards",
       "a collective across the processes of a data-parallel group: it runs in the training graph "
       "minimize builds (OptimizerOptions::data_parallel), its exchange kernel registered by mpi::World"},
      {"_FusedConv2D",
       "internal: sessions put it in the place of Conv2D -> BiasAdd [-> Relu] chains (an "
       "underscore op, not part of tf.raw_ops either)"},
      {"_MaxPoolGradReluGrad",
       "internal: sessions put it in the place of MaxPoolGrad -> ReluGrad pairs (an underscore op, as "
       "_FusedConv2D)"},
      {"_GroupedApplyAdam",
       "internal: sessions put it in the place of runs of ApplyAdam nodes (updates a Session's variables "
       "in place, as ApplyAdam)"},
  };
  return ops;
}

}  // namespace dagrad::raw_ops
