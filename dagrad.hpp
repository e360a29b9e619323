// dagrad: everything a user includes, as #include <dagrad/dagrad.hpp>.
#pragma once

#include "dagrad/core/dtype.hpp"
#include "dagrad/core/eager.hpp"
#include "dagrad/core/error.hpp"
#include "dagrad/core/graph.hpp"
#include "dagrad/core/npy.hpp"
#include "dagrad/core/registries.hpp"
#include "dagrad/core/session.hpp"
#include "dagrad/core/tensor.hpp"
#include "dagrad/core/tensor_xt.hpp"
#include "dagrad/core/threading.hpp"
#include "dagrad/ops/array_ops.hpp"
#include "dagrad/ops/math_ops.hpp"
#include "dagrad/ops/state_ops.hpp"
