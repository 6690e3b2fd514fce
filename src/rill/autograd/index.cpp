// Gradients of indexing (ops/index.cpp; the advanced-indexing rules that map
// x[indices] onto these ops are Note [Advanced indexing] in eager/index.cpp).
// index and index_put are each other's gradient: index's is index_put(accumulate=True)
// into zeros, so repeated indices add up; index_put's gradient for the values is index.
#include "rill/autograd/rules.h"
#include "rill/eager/math.h"

namespace rill::autograd {
namespace {

constexpr uint32_t kIn1 = 2, kAllButFirst = ~1u, kAllButFirstTwo = ~3u;

std::vector<Tensor> tail(const GradContext& c, size_t first) {
  std::vector<Tensor> out;
  for (size_t i = first; i < c.num_inputs(); ++i) out.push_back(c.input(i));
  return out;
}

std::vector<Tensor> index_backward(const GradContext& c) {
  std::vector<Tensor> out(c.num_inputs());
  const TensorMeta& x = c.input_meta(0);
  out[0] = eager::index_put_leading(zeros(x.shape, c.grad().dtype()), tail(c, 1), c.grad(), /*accumulate=*/true);
  return out;
}

std::vector<Tensor> index_put_backward(const GradContext& c) {
  std::vector<Tensor> out(c.num_inputs());
  std::vector<Tensor> idx = tail(c, 2);
  const Tensor& g = c.grad();
  if (c.needs_grad(0))
    out[0] = c.attr<bool>("accumulate") ? g : eager::index_put_leading(g, idx, scalar_tensor(Scalar(int64_t{0}), g.dtype()), false);
  if (c.needs_grad(1)) out[1] = eager::index_leading(g, idx);
  return out;
}

std::vector<Tensor> gather_backward(const GradContext& c) {
  const TensorMeta& x = c.input_meta(0);
  Tensor g = c.grad();
  return {eager::scatter(zeros(x.shape, g.dtype()), c.attr<int64_t>("dim"), c.input(1), g, "add"), Tensor()};
}

// g (index's shape) placed in zeros of src's shape, for a src larger than the index.
Tensor pad_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  Tensor z = zeros(shape, g.dtype());
  Tensor region = z;
  for (int64_t d = 0; d < g.ndim(); ++d) region = eager::narrow(region, d, 0, g.shape()[d]);
  eager::copy_(region, g);
  return z;
}

std::vector<Tensor> scatter_backward(const GradContext& c) {
  const std::string& reduce = c.attr<std::string>("reduce");
  const int64_t dim = c.attr<int64_t>("dim");
  Tensor index = c.input(1), g = c.grad();
  RILL_CHECK(reduce != "multiply", NotImplemented, "[scatter] the derivative for reduce='multiply' is not "
             "implemented");
  Tensor gx, gsrc;
  if (c.needs_grad(0)) {
    gx = reduce == "add" ? g
                         : eager::scatter(g, dim, index,
                                          eager::expand(scalar_tensor(Scalar(int64_t{0}), g.dtype()), index.shape()),
                                          "");
  }
  if (c.needs_grad(2)) gsrc = pad_to(eager::gather(g, dim, index), c.input_meta(2).shape);
  return {gx, Tensor(), gsrc};
}

}  // namespace

void register_index_rules() {
  define_rule("index", {"IndexBackward0", index_backward, kAllButFirst});
  define_rule("index_put", {"IndexPutBackward0", index_put_backward, kAllButFirstTwo});
  define_rule("gather", {"GatherBackward0", gather_backward, kIn1});
  define_rule("scatter", {"ScatterBackward0", scatter_backward, kIn1, 0, [](const GradContext& c) {
                 return c.attr<std::string>("reduce") == "add" ? "ScatterAddBackward0" : "ScatterBackward0";
               }});
}

}  // namespace rill::autograd
