// The Communicator on Open MPI (comm/communicator.h). Collectives are MPI's blocking calls, made on the
// comm thread (Note [The comm stream] in collectives.cpp): MPI picks its tuned algorithm for each size,
// and sends and receives posted before them go on progressing inside them. Sends and receives are
// nonblocking requests the comm thread polls, so a rank may post a receive and then a send.
#include "rill/comm/communicator.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "rill/core/half.h"
#include "rill/util/error.h"

namespace rill::comm {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "SUM";
    case ReduceOp::kAvg: return "AVG";
    case ReduceOp::kProduct: return "PRODUCT";
    case ReduceOp::kMin: return "MIN";
    case ReduceOp::kMax: return "MAX";
    case ReduceOp::kBand: return "BAND";
    case ReduceOp::kBor: return "BOR";
    case ReduceOp::kBxor: return "BXOR";
  }
  return "?";
}

namespace {

bool g_started_here = false;
int g_thread_level = MPI_THREAD_SINGLE;  // what MPI_Init_thread provided  // mpi_init called MPI_Init_thread (not mpi4py or another library)

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) [[likely]]
    return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, message, &length);
  RILL_FAIL(Runtime, "[", what, "] MPI failed: ", std::string(message, static_cast<size_t>(length)),
            " (do all ranks of the group call it in the same order, with tensors of the same size and dtype?)");
}

int as_count(int64_t n, const char* what) {
  RILL_CHECK(n <= INT_MAX, Value, "[", what, "] ", n, " elements at once is more than MPI takes (", INT_MAX,
             "); split the tensor");
  return static_cast<int>(n);
}

// float16 and bfloat16: two-byte types of rill's own, with their own reduction ops (MPI has neither).
MPI_Datatype g_float16 = MPI_DATATYPE_NULL, g_bfloat16 = MPI_DATATYPE_NULL;
MPI_Op g_half_ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, product, min, max

template <typename T, int kOp>
void reduce_half(void* in, void* inout, int n) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < n; ++i) {
    float x = a[i], y = b[i];
    float r = kOp == 0 ? x + y : kOp == 1 ? x * y : kOp == 2 ? (x < y || x != x ? x : y) : (x > y || x != x ? x : y);
    b[i] = T(r);
  }
}

template <int kOp>
void half_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  if (*type == g_bfloat16) {
    reduce_half<BFloat16, kOp>(in, inout, *len);
  } else {
    reduce_half<Half, kOp>(in, inout, *len);
  }
}

void make_half_types() {
  if (g_float16 != MPI_DATATYPE_NULL) return;
  check(MPI_Type_contiguous(2, MPI_BYTE, &g_float16), "init_process_group");
  check(MPI_Type_commit(&g_float16), "init_process_group");
  check(MPI_Type_contiguous(2, MPI_BYTE, &g_bfloat16), "init_process_group");
  check(MPI_Type_commit(&g_bfloat16), "init_process_group");
  check(MPI_Op_create(&half_op<0>, 1, &g_half_ops[0]), "init_process_group");
  check(MPI_Op_create(&half_op<1>, 1, &g_half_ops[1]), "init_process_group");
  check(MPI_Op_create(&half_op<2>, 1, &g_half_ops[2]), "init_process_group");
  check(MPI_Op_create(&half_op<3>, 1, &g_half_ops[3]), "init_process_group");
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::kBool: return MPI_C_BOOL;
    case DType::kUInt8: return MPI_UINT8_T;
    case DType::kInt8: return MPI_INT8_T;
    case DType::kInt16: return MPI_INT16_T;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kFloat16: return g_float16;
    case DType::kBFloat16: return g_bfloat16;
    case DType::kFloat32: return MPI_FLOAT;
    case DType::kFloat64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

// The MPI op for op on dtype. AVG reduces with SUM (the caller divides). bool reduces logically: SUM and MAX
// are "any", PRODUCT and MIN "all", as bitwise ops on 0/1 would be.
MPI_Op mpi_op(ReduceOp op, DType dtype, const char* what) {
  bool half = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
  bool floating = dtype_is_floating(dtype);
  if (op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor)
    RILL_CHECK(!floating, Value, "[", what, "] ReduceOp.", reduce_op_name(op), " needs an integer or bool tensor, got ",
               dtype_name(dtype));
  if (op == ReduceOp::kAvg)
    RILL_CHECK(dtype != DType::kBool, Value, "[", what, "] ReduceOp.AVG of a bool tensor has no meaning; convert it "
               "to a number type first");
  if (dtype == DType::kBool) {
    switch (op) {
      case ReduceOp::kSum: case ReduceOp::kMax: case ReduceOp::kBor: return MPI_LOR;
      case ReduceOp::kProduct: case ReduceOp::kMin: case ReduceOp::kBand: return MPI_LAND;
      default: return MPI_LXOR;
    }
  }
  switch (op) {
    case ReduceOp::kSum: case ReduceOp::kAvg: return half ? g_half_ops[0] : MPI_SUM;
    case ReduceOp::kProduct: return half ? g_half_ops[1] : MPI_PROD;
    case ReduceOp::kMin: return half ? g_half_ops[2] : MPI_MIN;
    case ReduceOp::kMax: return half ? g_half_ops[3] : MPI_MAX;
    case ReduceOp::kBand: return MPI_BAND;
    case ReduceOp::kBor: return MPI_BOR;
    case ReduceOp::kBxor: return MPI_BXOR;
  }
  return MPI_SUM;
}

template <typename T>
void divide(void* data, int64_t n, int by) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) p[i] = T(static_cast<T>(p[i] / static_cast<T>(by)));
}

template <typename T>
void divide_half(void* data, int64_t n, int by) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < n; ++i) p[i] = T(static_cast<float>(p[i]) / static_cast<float>(by));
}

// ReduceOp.AVG: the sum divided by the group's size (integer division for integer tensors, as NCCL's).
void finish_average(void* data, int64_t n, DType dtype, int size) {
  switch (dtype) {
    case DType::kUInt8: divide<uint8_t>(data, n, size); break;
    case DType::kInt8: divide<int8_t>(data, n, size); break;
    case DType::kInt16: divide<int16_t>(data, n, size); break;
    case DType::kInt32: divide<int32_t>(data, n, size); break;
    case DType::kInt64: divide<int64_t>(data, n, size); break;
    case DType::kFloat16: divide_half<Half>(data, n, size); break;
    case DType::kBFloat16: divide_half<BFloat16>(data, n, size); break;
    case DType::kFloat32: divide<float>(data, n, size); break;
    case DType::kFloat64: divide<double>(data, n, size); break;
    case DType::kBool: break;
  }
}

class MpiRequest final : public Request {
 public:
  MpiRequest(const char* what, int64_t* source) : what_(what), source_(source) {}
  MPI_Request* handle() { return &request_; }
  bool test() override {
    int done = 0;
    MPI_Status status;
    check(MPI_Test(&request_, &done, &status), what_);
    if (done && source_) *source_ = status.MPI_SOURCE;
    return done != 0;
  }

 private:
  const char* what_;
  int64_t* source_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "init_process_group");
    check(MPI_Comm_rank(comm_, &rank_), "init_process_group");
    check(MPI_Comm_size(comm_, &size_), "init_process_group");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) MPI_Comm_free(&comm_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::unique_ptr<Request> all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override {
    MPI_Op mop = mpi_op(op, dtype, "all_reduce");
    check(MPI_Allreduce(MPI_IN_PLACE, data, as_count(count, "all_reduce"), mpi_type(dtype), mop, comm_), "all_reduce");
    if (op == ReduceOp::kAvg) finish_average(data, count, dtype, size_);
    return nullptr;
  }

  std::unique_ptr<Request> reduce(void* data, int64_t count, DType dtype, ReduceOp op, int root) override {
    MPI_Op mop = mpi_op(op, dtype, "reduce");
    int n = as_count(count, "reduce");
    if (rank_ == root) {
      check(MPI_Reduce(MPI_IN_PLACE, data, n, mpi_type(dtype), mop, root, comm_), "reduce");
      if (op == ReduceOp::kAvg) finish_average(data, count, dtype, size_);
    } else {
      check(MPI_Reduce(data, nullptr, n, mpi_type(dtype), mop, root, comm_), "reduce");
    }
    return nullptr;
  }

  // Nonblocking, as the sends and receives: a rank that waits long for the root (a graph's master compiling) tests
  // it between sleeps (Note [Kernels that finish later] in vm/worker.cpp) instead of spinning in MPI_Bcast.
  std::unique_ptr<Request> broadcast(void* data, int64_t bytes, int root) override {
    auto r = std::make_unique<MpiRequest>("broadcast", nullptr);
    check(MPI_Ibcast(data, as_count(bytes, "broadcast"), MPI_BYTE, root, comm_, r->handle()), "broadcast");
    return r;
  }

  std::unique_ptr<Request> all_gather(const void* in, void* out, int64_t bytes) override {
    int n = as_count(bytes, "all_gather");
    check(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, comm_), "all_gather");
    return nullptr;
  }

  std::unique_ptr<Request> reduce_scatter(const void* in, void* out, int64_t count, DType dtype,
                                          ReduceOp op) override {
    MPI_Op mop = mpi_op(op, dtype, "reduce_scatter");
    check(MPI_Reduce_scatter_block(in, out, as_count(count, "reduce_scatter"), mpi_type(dtype), mop, comm_),
          "reduce_scatter");
    if (op == ReduceOp::kAvg) finish_average(out, count, dtype, size_);
    return nullptr;
  }

  std::unique_ptr<Request> send(const void* data, int64_t bytes, int peer, int tag) override {
    auto r = std::make_unique<MpiRequest>("send", nullptr);
    check(MPI_Isend(data, as_count(bytes, "send"), MPI_BYTE, peer, tag, comm_, r->handle()), "send");
    return r;
  }

  std::unique_ptr<Request> recv(void* data, int64_t bytes, int peer, int tag, int64_t* source) override {
    auto r = std::make_unique<MpiRequest>("recv", source);
    check(MPI_Irecv(data, as_count(bytes, "recv"), MPI_BYTE, peer < 0 ? MPI_ANY_SOURCE : peer, tag, comm_,
                    r->handle()), "recv");
    return r;
  }

  std::unique_ptr<Request> barrier() override {  // nonblocking, as broadcast
    auto r = std::make_unique<MpiRequest>("barrier", nullptr);
    check(MPI_Ibarrier(comm_, r->handle()), "barrier");
    return r;
  }

  std::unique_ptr<Communicator> subgroup(std::span<const int64_t> ranks) override {
    std::vector<int> members(ranks.begin(), ranks.end());
    MPI_Group all, part;
    check(MPI_Comm_group(comm_, &all), "new_group");
    check(MPI_Group_incl(all, static_cast<int>(members.size()), members.data(), &part), "new_group");
    MPI_Comm comm = MPI_COMM_NULL;
    int rc = MPI_Comm_create(comm_, part, &comm);
    MPI_Group_free(&part);
    MPI_Group_free(&all);
    check(rc, "new_group");
    if (comm == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiCommunicator>(comm, true);
  }

 private:
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> mpi_init() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  RILL_CHECK(!finalized, Runtime, "[init_process_group] MPI was shut down in this process and cannot start again; "
             "call init_process_group once per process");
  if (!initialized) {
    // MULTIPLE where the library has it, for the transfers of pipeline graphs (Note [Graph transfers] in
    // comm/boxing.cpp); everything else calls MPI from the comm thread only, which FUNNELED allows.
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &g_thread_level), "init_process_group");
    g_started_here = true;
  } else {
    // Another library (mpi4py) started MPI on its own thread: this thread may call it only at a level above
    // FUNNELED.
    MPI_Query_thread(&g_thread_level);
    RILL_CHECK(g_thread_level >= MPI_THREAD_SERIALIZED, Runtime, "[init_process_group] MPI was started by another "
               "library at a thread level that allows calls only from its own thread; start it with "
               "MPI_THREAD_SERIALIZED or MULTIPLE (mpi4py's default), or let rill start it");
  }
  make_half_types();
  return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, false);
}

void mpi_finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!g_started_here || finalized) return;
  for (MPI_Op& op : g_half_ops)
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  MPI_Type_free(&g_float16);
  MPI_Type_free(&g_bfloat16);
  g_float16 = g_bfloat16 = MPI_DATATYPE_NULL;
  MPI_Finalize();
}

void mpi_abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort returned: no MPI job to end
}

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

bool mpi_thread_multiple() { return g_thread_level >= MPI_THREAD_MULTIPLE; }

}  // namespace rill::comm
