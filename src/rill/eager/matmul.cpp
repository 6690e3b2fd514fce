// eager::matmul: torch.matmul's 1-D cases mapped onto the "matmul" op (ndim >= 2,
// broadcast batches) with views: a 1-D left operand becomes a row [1, k], a 1-D
// right operand a column [k, 1], and the added dim is removed from the result.
#include "rill/eager/autocast.h"
#include "rill/eager/functional.h"

namespace rill::eager {

Tensor matmul(const Tensor& a, const Tensor& b) {
  static const OpSchema& mm = op("matmul");
  RILL_CHECK(a.defined() && b.defined(), Value, "[matmul] got an undefined tensor");
  if (autocast_state().enabled) [[unlikely]]  // Note [Autocast]
    return autocast_lower([](const Tensor& x, const Tensor& y) { return matmul(x, y); }, a, b);
  const int64_t da = a.ndim(), db = b.ndim();
  RILL_CHECK(da >= 1 && db >= 1, Runtime,
             "[matmul] both arguments to matmul need to be at least 1D, but they are ", da,
             "D and ", db, "D");
  if (da == 1 && db == 1)
    RILL_CHECK(a.shape()[0] == b.shape()[0], Runtime,
               "[matmul] inconsistent tensor size, expected tensor [", a.shape()[0], "] and src [",
               b.shape()[0], "] to have the same number of elements, but got ", a.shape()[0],
               " and ", b.shape()[0], " elements respectively");
  Tensor in[2] = {da == 1 ? unsqueeze(a, 0) : a, db == 1 ? unsqueeze(b, 1) : b};
  Tensor out = call1(mm, in);
  if (da == 1 && db == 1) return view(out, {});
  if (da == 1) return squeeze(out, std::vector<int64_t>{out.ndim() - 2});
  if (db == 1) return squeeze(out, std::vector<int64_t>{out.ndim() - 1});
  return out;
}

}  // namespace rill::eager
