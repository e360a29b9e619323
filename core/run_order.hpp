// The order in which a plan runs its nodes. Node ids are already a topological order (a node's
// inputs exist before it is added); a node whose op starts early (OpDef::start_early) moves up to
// just after the last node it depends on (inputs and control inputs; a node a rewrite moved counts
// as its fused node), after any earlier such node, so that every process of a job starts its
// collectives in the same order. Absorbed and moved nodes do not run.
#pragma once

#include <vector>

#include "dagrad/core/rewrite.hpp"
#include "dagrad/core/session.hpp"

namespace dagrad {

std::vector<int> run_order(const Graph& g, const std::vector<char>& needed, const Rewritten& rewritten,
                           const FeedMap& feeds);

}  // namespace dagrad
