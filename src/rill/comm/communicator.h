// The comm layer's interface (docs/architecture.md §1): a group of processes and the collective and
// point-to-point operations between them, on raw buffers. comm/mpi.cpp implements it on Open MPI; a
// second backend (Gloo, oneCCL) would implement the same few calls. Every call is made on the comm
// thread (comm/collectives.cpp), so an implementation needs no locking and MPI_THREAD_FUNNELED suffices.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "rill/core/dtype.h"

namespace rill::comm {

/** How a reduction combines the ranks' values (torch.distributed.ReduceOp). */
enum class ReduceOp : int64_t { kSum, kAvg, kProduct, kMin, kMax, kBand, kBor, kBxor };

/** Its name, for messages. */
const char* reduce_op_name(ReduceOp op);

/** An operation in flight. */
class Request {
 public:
  virtual ~Request() = default;
  /** True once the operation is done; throws rill::Error if it failed. */
  virtual bool test() = 0;
};

/** One group of processes. Each call returns null when the operation is already done, else its Request. */
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /** Reduce count elements of data over the group, in place on every rank. */
  virtual std::unique_ptr<Request> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) = 0;
  /** Reduce count elements of data over the group into data on rank root (others' data is unchanged). */
  virtual std::unique_ptr<Request> reduce(void* data, int64_t count, DType dtype, ReduceOp op, int root) = 0;
  /** Rank root's bytes of data, on every rank. */
  virtual std::unique_ptr<Request> broadcast(void* data, int64_t bytes, int root) = 0;
  /** Every rank's bytes of in, concatenated in rank order into out (size() * bytes). */
  virtual std::unique_ptr<Request> all_gather(const void* in, void* out, int64_t bytes) = 0;
  /** in (size() * count elements) reduced over the group; this rank's count-element share into out. */
  virtual std::unique_ptr<Request> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                                  ReduceOp op) = 0;
  /** Send bytes of data to rank peer. */
  virtual std::unique_ptr<Request> send(const void* data, int64_t bytes, int peer, int tag) = 0;
  /** Receive bytes into data from rank peer (-1: any rank); *source gets the sender's rank when done. */
  virtual std::unique_ptr<Request> recv(void* data, int64_t bytes, int peer, int tag, int64_t* source) = 0;
  /** Wait for every rank of the group. */
  virtual std::unique_ptr<Request> barrier() = 0;
  /** A communicator of this one's ranks `ranks` (collective over this group); null on a rank not in it. */
  virtual std::unique_ptr<Communicator> subgroup(std::span<const int64_t> ranks) = 0;
};

/** Start MPI on the calling thread (the comm thread); or take over an MPI another library started (mpi4py),
 * if its thread level lets this thread call it. Returns the world. */
std::unique_ptr<Communicator> mpi_init();
/** Shut MPI down, if mpi_init started it. */
void mpi_finalize();
/** End every process of the job with status code (MPI_Abort): a rank that failed must not leave the others
 * waiting for it. Callable from any thread. */
[[noreturn]] void mpi_abort(int code);
/** True while MPI is initialised and not finalised. */
bool mpi_running();
/** True when any thread may call MPI at any time (MPI_THREAD_MULTIPLE): graph transfers need it, each waiting
 * for its peer on a thread of its own. */
bool mpi_thread_multiple();

}  // namespace rill::comm
