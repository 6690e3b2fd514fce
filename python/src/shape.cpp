// Shape, indexing and sorting ops: module functions (rill.stack, rill.gather, rill.unique, ...) and Tensor
// methods, with PyTorch's names, argument names and defaults, calling the functional API (eager::), which
// records gradients itself.
#include "bind.h"
#include "rill/ops/type_promotion.h"

namespace rill::py {
namespace {

std::vector<Tensor> tensor_list(nb::handle seq, const char* op) {
  RILL_CHECK(PyTuple_Check(seq.ptr()) || PyList_Check(seq.ptr()), Type, "[", op, "] expected a tuple or list of "
             "Tensors, got ", nb::inst_name(seq).c_str());
  std::vector<Tensor> out;
  for (nb::handle h : nb::borrow<nb::sequence>(seq)) {
    RILL_CHECK(nb::isinstance<Tensor>(h), Type, "[", op, "] expected a sequence of Tensors, got an element of type ",
               nb::inst_name(h).c_str());
    out.push_back(nb::cast<Tensor>(h));
  }
  return out;
}

nb::tuple to_tuple(const std::vector<Tensor>& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(nb::cast(t));
  return nb::tuple(l);
}


std::string reduce_arg(nb::handle reduce, const char* op) {
  if (reduce.is_none()) return "";
  std::string r = nb::cast<std::string>(reduce);
  RILL_CHECK(r == "add" || r == "multiply", Runtime, "[", op, "] reduce argument must be either add or multiply, "
             "got '", r, "'");
  return r;
}

Tensor scatter_any(const Tensor& x, int64_t dim, const Tensor& index, nb::handle src, nb::handle value,
                   nb::handle reduce, bool inplace) {
  const std::string r = reduce_arg(reduce, "scatter");
  nb::handle what = src.is_none() ? value : src;
  RILL_CHECK(!what.is_none(), Type, "[scatter] expected a src Tensor or a value");
  if (nb::isinstance<Tensor>(what)) return eager::scatter(x, dim, index, nb::cast<Tensor>(what), r, inplace);
  auto s = scalar_from_object(what);
  RILL_CHECK(s.has_value(), Type, "[scatter] expected a src Tensor or a number, got ", nb::inst_name(what).c_str());
  check_strict_number("scatter", *s, x.dtype());
  return eager::scatter_value(x, dim, index, *s, r, inplace);
}

Tensor fill_value(const Tensor& x, nb::handle value, const char* op) {
  if (nb::isinstance<Tensor>(value)) {
    const Tensor& v = nb::cast<const Tensor&>(value);
    check_strict_store(op, v.dtype(), x.dtype(), "value", "value");
    return v;
  }
  auto s = scalar_from_object(value);
  RILL_CHECK(s.has_value(), Type, "[", op, "] value must be a number or a 0-dim Tensor, got ",
             nb::inst_name(value).c_str());
  check_strict_number(op, *s, x.dtype());
  return eager::full({}, *s, x.dtype());
}

std::vector<Tensor> index_list(nb::handle indices) {
  RILL_CHECK(PyTuple_Check(indices.ptr()) || PyList_Check(indices.ptr()), Type, "[index_put] indices must be a "
             "tuple of Tensors");
  std::vector<Tensor> out;
  for (nb::handle h : nb::borrow<nb::sequence>(indices)) {
    if (h.is_none()) out.emplace_back();
    else out.push_back(nb::cast<Tensor>(h));
  }
  return out;
}

Scalar number(nb::handle h, const char* op, const char* what) {
  auto s = scalar_from_object(h);
  RILL_CHECK(s.has_value(), Type, "[", op, "] ", what, " must be a number, got ", nb::inst_name(h).c_str());
  return *s;
}

}  // namespace

void init_shape(nb::module_& m, nb::class_<Tensor>& cls) {
  auto as_strided = [](const Tensor& x, std::vector<int64_t> size, std::vector<int64_t> stride,
                       std::optional<int64_t> storage_offset) {
    int64_t start = storage_offset.value_or(x.offset());
    RILL_CHECK(start >= 0, Runtime, "[as_strided] storage_offset must be >= 0, got ", start);
    int64_t last = start;
    bool empty = false;
    for (size_t d = 0; d < size.size() && d < stride.size(); ++d) {
      empty = empty || size[d] == 0;
      last += (size[d] - 1) * stride[d];
    }
    int64_t available = static_cast<int64_t>(x.storage()->nbytes() / dtype_itemsize(x.dtype()));
    RILL_CHECK(empty || size.size() != stride.size() || last < available, Runtime, "[as_strided] setStorage: sizes ",
               shape_str(Shape(size.begin(), size.end())), ", strides ", shape_str(Shape(stride.begin(), stride.end())),
               " and storage offset ", start, " need ", last + 1, " elements but the storage holds ", available,
               "; choose a view inside the tensor's memory");
    static const OpSchema& op = eager::op("as_strided");
    return eager::view_call(op, x, make_attrs({std::move(size), std::move(stride), start - x.offset()}));
  };
  m.def("as_strided", as_strided, nb::arg("input"), nb::arg("size"), nb::arg("stride"),
        nb::arg("storage_offset") = nb::none(), "A view of input's memory with the given sizes, strides and offset.");
  cls.def("as_strided", as_strided, nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none(),
          "A view of this tensor's memory with the given sizes, strides and offset.");
  // --- shape ---
  m.def("stack", [](nb::handle tensors, int64_t dim) { return eager::stack(tensor_list(tensors, "stack"), dim); },
        nb::arg("tensors"), nb::arg("dim") = 0);
  auto split = [](const Tensor& x, nb::handle size, int64_t dim) {
    if (PyTuple_Check(size.ptr()) || PyList_Check(size.ptr()))
      return to_tuple(eager::split_with_sizes(x, ints_from_object(size, "split"), dim));
    return to_tuple(eager::split(x, ints_from_object(size, "split").at(0), dim));
  };
  m.def("split", split, nb::arg("tensor"), nb::arg("split_size_or_sections"), nb::arg("dim") = 0);
  cls.def("split", split, nb::arg("split_size"), nb::arg("dim") = 0);
  auto chunk = [](const Tensor& x, int64_t chunks, int64_t dim) { return to_tuple(eager::chunk(x, chunks, dim)); };
  m.def("chunk", chunk, nb::arg("input"), nb::arg("chunks"), nb::arg("dim") = 0);
  cls.def("chunk", chunk, nb::arg("chunks"), nb::arg("dim") = 0);
  auto unflatten = [](const Tensor& x, int64_t dim, nb::handle sizes) {
    return eager::unflatten(x, dim, ints_from_object(sizes, "unflatten"));
  };
  m.def("unflatten", unflatten, nb::arg("input"), nb::arg("dim"), nb::arg("sizes"));
  cls.def("unflatten", unflatten, nb::arg("dim"), nb::arg("sizes"));
  auto movedim = [](const Tensor& x, nb::handle src, nb::handle dst) {
    return eager::movedim(x, ints_from_object(src, "movedim"), ints_from_object(dst, "movedim"));
  };
  for (const char* n : {"movedim", "moveaxis"}) {
    m.def(n, movedim, nb::arg("input"), nb::arg("source"), nb::arg("destination"));
    cls.def(n, movedim, nb::arg("source"), nb::arg("destination"));
  }
  cls.def("repeat", [](const Tensor& x, nb::args reps, nb::kwargs kw) {
    return eager::repeat(x, sizes_from(reps, kw, "repeats", "repeat"));
  });
  m.def("tile", [](const Tensor& x, nb::handle dims) { return eager::tile(x, ints_from_object(dims, "tile")); },
        nb::arg("input"), nb::arg("dims"));
  cls.def("tile", [](const Tensor& x, nb::args dims, nb::kwargs kw) {
    return eager::tile(x, sizes_from(dims, kw, "dims", "tile"));
  });
  m.def("flip", [](const Tensor& x, nb::handle dims) { return eager::flip(x, ints_from_object(dims, "flip")); },
        nb::arg("input"), nb::arg("dims"));
  cls.def("flip", [](const Tensor& x, nb::args dims, nb::kwargs kw) {
    return eager::flip(x, sizes_from(dims, kw, "dims", "flip"));
  });
  auto fliplr = [](const Tensor& x) {
    RILL_CHECK(x.ndim() >= 2, Runtime, "[fliplr] Input must be >= 2-d.");
    return eager::flip(x, {1});
  };
  auto flipud = [](const Tensor& x) {
    RILL_CHECK(x.ndim() >= 1, Runtime, "[flipud] Input must be >= 1-d.");
    return eager::flip(x, {0});
  };
  m.def("fliplr", fliplr, nb::arg("input"));
  cls.def("fliplr", fliplr);
  m.def("flipud", flipud, nb::arg("input"));
  cls.def("flipud", flipud);
  auto roll = [](const Tensor& x, nb::handle shifts, nb::handle dims) {
    std::vector<int64_t> d;
    if (!dims.is_none()) d = ints_from_object(dims, "roll");
    return eager::roll(x, ints_from_object(shifts, "roll"), d);
  };
  m.def("roll", roll, nb::arg("input"), nb::arg("shifts"), nb::arg("dims") = nb::none());
  cls.def("roll", roll, nb::arg("shifts"), nb::arg("dims") = nb::none());
  auto diag = [](const Tensor& x, int64_t k) { return eager::diag(x, k); };
  m.def("diag", diag, nb::arg("input"), nb::arg("diagonal") = 0);
  cls.def("diag", diag, nb::arg("diagonal") = 0);
  cls.def("view_as", [](const Tensor& x, const Tensor& o) { return eager::view(x, o.shape()); },
          nb::arg("other"));
  cls.def("reshape_as", [](const Tensor& x, const Tensor& o) { return eager::reshape(x, o.shape()); },
          nb::arg("other"));

  // --- indexing ---
  auto index_select = [](const Tensor& x, int64_t dim, const Tensor& index) {
    return eager::index_select(x, dim, index);
  };
  m.def("index_select", index_select, nb::arg("input"), nb::arg("dim"), nb::arg("index"));
  cls.def("index_select", index_select, nb::arg("dim"), nb::arg("index"));
  auto gather = [](const Tensor& x, int64_t dim, const Tensor& index, bool) { return eager::gather(x, dim, index); };
  m.def("gather", gather, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::kw_only(),
        nb::arg("sparse_grad") = false);
  cls.def("gather", gather, nb::arg("dim"), nb::arg("index"), nb::kw_only(), nb::arg("sparse_grad") = false);
  // Out-of-place forms are module functions and methods; the in-place ones (name_) return self itself.
  auto scatter = [](const Tensor& x, int64_t dim, const Tensor& index, nb::handle src, nb::handle value,
                    nb::handle reduce) { return scatter_any(x, dim, index, src, value, reduce, false); };
  m.def("scatter", scatter, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src") = nb::none(),
        nb::kw_only(), nb::arg("value") = nb::none(), nb::arg("reduce") = nb::none());
  cls.def("scatter", scatter, nb::arg("dim"), nb::arg("index"), nb::arg("src") = nb::none(), nb::kw_only(),
          nb::arg("value") = nb::none(), nb::arg("reduce") = nb::none());
  cls.def("scatter_", [](const Tensor& x, int64_t dim, const Tensor& index, nb::handle src, nb::handle value,
                         nb::handle reduce) -> const Tensor& {
    scatter_any(x, dim, index, src, value, reduce, true);
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src") = nb::none(), nb::kw_only(), nb::arg("value") = nb::none(),
          nb::arg("reduce") = nb::none(), nb::rv_policy::reference_internal);
  auto scatter_add = [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
    return eager::scatter(x, dim, index, src, "add", false);
  };
  m.def("scatter_add", scatter_add, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  cls.def("scatter_add", scatter_add, nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  cls.def("scatter_add_", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) -> const Tensor& {
    eager::scatter(x, dim, index, src, "add", true);
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::rv_policy::reference_internal);
  auto index_add = [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, nb::handle alpha) {
    return eager::index_add(x, dim, index, source, number(alpha, "index_add", "alpha"), false);
  };
  m.def("index_add", index_add, nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("source"),
        nb::kw_only(), nb::arg("alpha") = 1);
  cls.def("index_add", index_add, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(),
          nb::arg("alpha") = 1);
  cls.def("index_add_", [](const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                           nb::handle alpha) -> const Tensor& {
    eager::index_add(x, dim, index, source, number(alpha, "index_add_", "alpha"), true);
    return x;
  }, nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1,
          nb::rv_policy::reference_internal);
  auto masked_fill = [](const Tensor& x, const Tensor& mask, nb::handle value) {
    return eager::masked_fill(x, mask, fill_value(x, value, "masked_fill"), false);
  };
  m.def("masked_fill", masked_fill, nb::arg("input"), nb::arg("mask"), nb::arg("value"));
  cls.def("masked_fill", masked_fill, nb::arg("mask"), nb::arg("value"));
  cls.def("masked_fill_", [](const Tensor& x, const Tensor& mask, nb::handle value) -> const Tensor& {
    eager::masked_fill(x, mask, fill_value(x, value, "masked_fill_"), true);
    return x;
  }, nb::arg("mask"), nb::arg("value"), nb::rv_policy::reference_internal);
  auto index_put = [](const Tensor& x, nb::handle indices, const Tensor& values, bool accumulate) {
    check_strict_store("index_put", values.dtype(), x.dtype(), "values", "values");
    return eager::index_put(x, index_list(indices), values, accumulate);
  };
  m.def("index_put", index_put, nb::arg("input"), nb::arg("indices"), nb::arg("values"),
        nb::arg("accumulate") = false);
  cls.def("index_put", index_put, nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false);
  cls.def("index_put_", [](const Tensor& x, nb::handle indices, const Tensor& values, bool accumulate)
              -> const Tensor& {
    check_strict_store("index_put_", values.dtype(), x.dtype(), "values", "values");
    return eager::index_put_(x, index_list(indices), values, accumulate);
  },
          nb::arg("indices"), nb::arg("values"), nb::arg("accumulate") = false, nb::rv_policy::reference_internal);
  auto masked_select = [](const Tensor& x, const Tensor& mask) { return eager::masked_select(x, mask); };
  m.def("masked_select", masked_select, nb::arg("input"), nb::arg("mask"));
  cls.def("masked_select", masked_select, nb::arg("mask"));
  auto take_along_dim = [](const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
    return eager::take_along_dim(x, indices, dim);
  };
  m.def("take_along_dim", take_along_dim, nb::arg("input"), nb::arg("indices"), nb::arg("dim") = nb::none());
  cls.def("take_along_dim", take_along_dim, nb::arg("indices"), nb::arg("dim") = nb::none());
  auto nonzero = [](const Tensor& x, bool as_tuple) -> nb::object {
    if (as_tuple) return to_tuple(eager::nonzero_tuple(x));
    return nb::cast(eager::nonzero(x));
  };
  m.def("nonzero", nonzero, nb::arg("input"), nb::kw_only(), nb::arg("as_tuple") = false);
  cls.def("nonzero", nonzero, nb::kw_only(), nb::arg("as_tuple") = false);
  m.def("argwhere", [](const Tensor& x) { return eager::nonzero(x); }, nb::arg("input"));
  cls.def("argwhere", [](const Tensor& x) { return eager::nonzero(x); });
  // where(condition): the one-argument form, nonzero(condition, as_tuple=True).
  m.def("where", [](const Tensor& cond) { return to_tuple(eager::nonzero_tuple(cond)); }, nb::arg("condition"));

  // --- sorting: sort, argsort, topk and kthvalue come from their signatures ---
  auto unique = [](const Tensor& x, bool /*sorted*/, bool return_inverse, bool return_counts,
                   nb::handle dim) -> nb::object {
    std::vector<Tensor> r = dim.is_none() ? eager::unique(x) : eager::unique_dim(x, nb::cast<int64_t>(dim));
    if (!return_inverse && !return_counts) return nb::cast(r[0]);
    std::vector<Tensor> out = {r[0]};
    if (return_inverse) out.push_back(r[1]);
    if (return_counts) out.push_back(r[2]);
    return to_tuple(out);
  };
  m.def("unique", unique, nb::arg("input"), nb::arg("sorted") = true, nb::arg("return_inverse") = false,
        nb::arg("return_counts") = false, nb::arg("dim") = nb::none());
  cls.def("unique", unique, nb::arg("sorted") = true, nb::arg("return_inverse") = false,
          nb::arg("return_counts") = false, nb::arg("dim") = nb::none());
}

}  // namespace rill::py
