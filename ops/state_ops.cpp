// Schemas and builders: VariableV2 and Assign.
#include "dagrad/ops/state_ops.hpp"

#include "dagrad/ops/register.hpp"

namespace dagrad::ops {

void register_state_ops(OpRegistry& r) {
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  r.add(OpDefBuilder("VariableV2")
            .output_ref("ref", "dtype")
            .attr_shape("shape")
            .attr_type("dtype", all)
            .attr_string("container", {}, "")
            .attr_string("shared_name", {}, "")
            .shape_fn([](ShapeContext& c) { c.set_output(0, c.attr<Shape>("shape")); })
            .stateful()
            .doc("A variable: its value lives in the session and persists across runs.")
            .build());
  r.add(OpDefBuilder("Assign")
            .input_ref("ref", "T")
            .input("value", "T")
            .output("output_ref", "T")
            .attr_type("T", all)
            .attr_bool("validate_shape", true)
            .attr_bool("use_locking", true)
            .shape_fn([](ShapeContext& c) {
              // An uninitialised variable arrives with dtype Invalid at run time: nothing to compare.
              const bool ref_known = c.input_dtype(0) != DType::Invalid;
              if (ref_known && c.attr<bool>("validate_shape")) {
                const Shape& ref = c.input_shape(0);
                const Shape& value = c.input_shape(1);
                bool ok = ref.rank() == value.rank();
                for (int i = 0; ok && i < ref.rank(); ++i) ok = ref[i] < 0 || value[i] < 0 || ref[i] == value[i];
                if (!ok) {
                  invalid_argument("Assign: Shapes of ref and value must match: ", ref.to_string(), " vs. ",
                                   value.to_string());
                }
              }
              c.set_output(0, c.input_shape(1));
            })
            .stateful()
            .doc("Sets a variable to a copy of value.")
            .build());
}

Output variable(Graph& g, Shape shape, DType dtype, std::string_view name) {
  return g.output(
      g.add_node("VariableV2", {}, {{"shape", std::move(shape)}, {"dtype", dtype}}, name.empty() ? "Variable" : name)
          .id);
}

Output assign(Graph& g, Output ref, Output value, bool validate_shape, std::string_view name) {
  return g.output(g.add_node("Assign", {ref, value}, {{"validate_shape", validate_shape}}, name).id);
}

}  // namespace dagrad::ops
