// rill.distributed's C++ side: the process group and its operations as instructions on the comm stream
// (Note [The comm stream] in collectives.cpp). Every call returns at once; the tensors it returns are
// written when the operation is done, so reading one (or a sync point) waits for it.
#pragma once

#include <cstdint>
#include <vector>

#include "rill/comm/communicator.h"
#include "rill/core/tensor.h"
#include "rill/vm/stream.h"

namespace rill::comm {

/** Give the comm ops (ops/comm.cpp) their kernels: the comm layer's share of kernels::register_all, done by
 * init() (the kernels layer sits below comm and cannot). */
void register_kernels();

/** The graph boxing ops' kernels (comm/boxing.cpp): register_kernels installs them. */
void register_boxing_kernels();
/** The comm stream: its instructions run on the comm thread in submission order (Note [The comm stream]); a graph
 * whose plan communicates launches there (Note [Graphs that communicate] in runtime/compiled_graph.cpp). */
vm::Stream stream();
/** This rank's communicator of group `group`: on the comm thread only. ValueError when the rank is not in it. */
Communicator& communicator(int64_t group);
/** The world's ranks on a communicator of their own, for graph transfers (Note [Graph transfers] in
 * comm/boxing.cpp): their tags never meet the program's own sends. */
Communicator& graph_peers();

/** Start the process group on the world (MPI). Wait on the returned token, then read world_rank/world_size. */
Tensor init();
/** This process's rank in the world, and the world's size (after init's token is readable). */
int world_rank();
int world_size();
/** True between init and finalize. */
bool initialized();
/** Shut the communication library down (at exit): waits for everything in flight first. */
Tensor finalize();
/** End the whole job from any thread (a rank failed): MPI_Abort. */
[[noreturn]] void abort_job(int code);

/** Make group `group` of the world ranks `ranks`: every rank of the world calls it, in the same order. */
Tensor new_group(int64_t group, const std::vector<int64_t>& ranks);
/** Free group `group` (this rank's part of it). */
Tensor destroy_group(int64_t group);

/** t reduced over the group, in place. Returns t. */
void all_reduce(const Tensor& t, ReduceOp op, int64_t group);
/** Rank src's t into t, in place. */
void broadcast(const Tensor& t, int64_t src, int64_t group);
/** t reduced over the group into rank dst's t. */
void reduce(const Tensor& t, ReduceOp op, int64_t dst, int64_t group);
/** Every rank's t stacked in rank order: shape [world, *t.shape]. */
Tensor all_gather(const Tensor& t, int64_t world, int64_t group);
/** This rank's share of input (first dim world * n) reduced over the group, into out (first dim n). */
void reduce_scatter(const Tensor& out, const Tensor& input, ReduceOp op, int64_t world, int64_t group);
/** Send t to rank dst of the group. Returns a token written once the send is done. */
Tensor send(const Tensor& t, int64_t dst, int64_t tag, int64_t group);
/** Receive into t from rank src (-1: any). Returns the sender's rank as a one-element int64 tensor. */
Tensor recv(const Tensor& t, int64_t src, int64_t tag, int64_t group);
/** A token written once every rank of the group reached the barrier. */
Tensor barrier(int64_t group);

}  // namespace rill::comm
