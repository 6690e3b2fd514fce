// rill._C._nn: the nn ops with dedicated kernels (autograd/nn.cpp), called by
// python/rill/nn/functional.py, which parses torch.nn.functional's signatures
// and composes the other functions from these and the Tensor ops.
#include "bind.h"

namespace rill::py {
namespace {

// An optional tensor argument: None -> undefined; anything but a Tensor -> TypeError naming op.
Tensor optional_tensor(nb::handle h, const char* op, const char* what) {
  if (h.is_none()) return Tensor();
  RILL_CHECK(nb::isinstance<Tensor>(h), Type, "[", op, "] ", what, " must be a Tensor or None, got ",
             nb::inst_name(h).c_str());
  return nb::cast<Tensor>(h);
}

}  // namespace

void init_nn_functional(nb::module_& m) {
  nb::module_ nn = m.def_submodule("_nn", "nn ops with dedicated kernels (see rill.nn.functional)");
  auto softmax = [](bool log) {
    return [log](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
      return eager::softmax(x, dim, log, dtype);
    };
  };
  nn.def("softmax", softmax(false), nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  nn.def("log_softmax", softmax(true), nb::arg("input"), nb::arg("dim"), nb::arg("dtype") = nb::none());
  nn.def("layer_norm", [](const Tensor& x, nb::handle shape, nb::handle w, nb::handle b, double eps) {
    return eager::layer_norm(x, ints_from_object(shape, "layer_norm"), optional_tensor(w, "layer_norm", "weight"),
                                optional_tensor(b, "layer_norm", "bias"), eps);
  }, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight") = nb::none(), nb::arg("bias") = nb::none(),
     nb::arg("eps") = 1e-5);
  nn.def("linear", [](const Tensor& x, const Tensor& w, nb::handle b) {
    return eager::linear(x, w, optional_tensor(b, "linear", "bias"));
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias") = nb::none());
  nn.def("embedding", [](const Tensor& indices, const Tensor& weight, int64_t padding_idx) {
    return eager::embedding(weight, indices, padding_idx);
  }, nb::arg("input"), nb::arg("weight"), nb::arg("padding_idx") = -1);
  nn.def("dropout", [](const Tensor& x, double p, bool training) { return eager::dropout(x, p, training); },
         nb::arg("input"), nb::arg("p") = 0.5, nb::arg("training") = true);
  nn.def("nll_loss", [](const Tensor& x, const Tensor& target, nb::handle w, int64_t reduction, int64_t ignore) {
    return eager::nll_loss(x, target, optional_tensor(w, "nll_loss", "weight"), reduction, ignore);
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight") = nb::none(), nb::arg("reduction") = 1,
     nb::arg("ignore_index") = -100);
}

}  // namespace rill::py
