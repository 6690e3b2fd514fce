// Logical inference over a job (seed item 11): every op conf's output descs from
// its input descs, with a cache over interned symbols. The key of an op node is
// (its op conf without names, its input descs, the job conf), each interned, so
// a model of 48 identical blocks infers each distinct op once and finds the rest
// in the cache. See Note [The inference cache] in infer.cpp.
#pragma once

#include <cstdint>

#include "rill/graph/job.pb.h"

namespace rill::graph {

class OpGraph;

struct InferStats {
  int64_t computed = 0;  // op nodes whose outputs were inferred by their schema
  int64_t hits = 0;      // op nodes whose outputs came from the cache
};

/** Fill every op's output_descs in job (ops in topological order, as traced); raises rill::Error naming the op
 * and its user line when an op's inference fails. Counts into stats. The cache lives as long as the process. */
void infer_job(Job& job, InferStats& stats);
/** infer_job over g, an OpGraph of job built after its last rewrite (inference changes only output descs, so g
 * stays valid for the compiler). */
void infer_job(Job& job, const OpGraph& g, InferStats& stats);
/** Entries in the process's logical inference cache (for tests). */
int64_t infer_cache_size();

}  // namespace rill::graph
