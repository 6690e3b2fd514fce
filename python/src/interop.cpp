// numpy and DLPack: zero-copy in both directions. A numpy array made from a
// tensor keeps the tensor's storage alive; a tensor made from numpy or DLPack
// keeps the producer's buffer alive and releases it (with the GIL) when done.
#include <nanobind/ndarray.h>

#include "bind.h"

namespace rill::py {
namespace {

namespace dl = nb::dlpack;

dl::dtype to_dlpack(DType t) {
  switch (t) {
    case DType::kBool: return {static_cast<uint8_t>(dl::dtype_code::Bool), 8, 1};
    case DType::kUInt8: return {static_cast<uint8_t>(dl::dtype_code::UInt), 8, 1};
    case DType::kInt8: return {static_cast<uint8_t>(dl::dtype_code::Int), 8, 1};
    case DType::kInt16: return {static_cast<uint8_t>(dl::dtype_code::Int), 16, 1};
    case DType::kInt32: return {static_cast<uint8_t>(dl::dtype_code::Int), 32, 1};
    case DType::kInt64: return {static_cast<uint8_t>(dl::dtype_code::Int), 64, 1};
    case DType::kFloat16: return {static_cast<uint8_t>(dl::dtype_code::Float), 16, 1};
    case DType::kBFloat16: return {static_cast<uint8_t>(dl::dtype_code::Bfloat), 16, 1};
    case DType::kFloat32: return {static_cast<uint8_t>(dl::dtype_code::Float), 32, 1};
    case DType::kFloat64: return {static_cast<uint8_t>(dl::dtype_code::Float), 64, 1};
  }
  return {};
}

std::optional<DType> from_dlpack_dtype(dl::dtype d) {
  if (d.lanes != 1) return std::nullopt;
  auto code = static_cast<dl::dtype_code>(d.code);
  switch (code) {
    case dl::dtype_code::Bool: return d.bits == 8 ? std::optional(DType::kBool) : std::nullopt;
    case dl::dtype_code::UInt: return d.bits == 8 ? std::optional(DType::kUInt8) : std::nullopt;
    case dl::dtype_code::Int:
      if (d.bits == 8) return DType::kInt8;
      if (d.bits == 16) return DType::kInt16;
      if (d.bits == 32) return DType::kInt32;
      if (d.bits == 64) return DType::kInt64;
      return std::nullopt;
    case dl::dtype_code::Float:
      if (d.bits == 16) return DType::kFloat16;
      if (d.bits == 32) return DType::kFloat32;
      if (d.bits == 64) return DType::kFloat64;
      return std::nullopt;
    case dl::dtype_code::Bfloat: return d.bits == 16 ? std::optional(DType::kBFloat16) : std::nullopt;
    default: return std::nullopt;
  }
}

// The owner object of an exported array: a capsule holding a Tensor handle.
nb::capsule owner_of(const Tensor& t) {
  return nb::capsule(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
}

template <typename Framework>
nb::ndarray<Framework> export_array(const Tensor& t, const char* api, bool shared = true) {
  RILL_CHECK(t.device().type == DeviceType::kCPU, Type, "[", api, "] can't convert a ", t.device().str(),
             " tensor; use .cpu() first");
  wait_readable(t);
  if (shared) t.storage()->mark_exported();  // Note [Shared memory is synchronous]
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  void* data = t.numel() == 0 ? nullptr : t.data_ptr();
  return nb::ndarray<Framework>(data, shape.size(), shape.data(), owner_of(t), t.strides().data(),
                                to_dlpack(t.dtype()), nb::device::cpu::value, 0);
}

// Note [External memory lifetime]
// A tensor that adopts a numpy/DLPack buffer holds an nb::ndarray (a reference
// to the producer). The storage deleter drops it with the GIL held; at
// interpreter shutdown Python objects can no longer be released, so it leaks.
void release_ndarray(void* ctx, void*) {
  auto* arr = static_cast<nb::ndarray<>*>(ctx);
  if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
  nb::gil_scoped_acquire gil;
  delete arr;
}

Tensor adopt(nb::ndarray<nb::ro> arr, const char* api) {
  RILL_CHECK(arr.device_type() == nb::device::cpu::value, Type, "[", api,
             "] only CPU arrays can be shared with rill");
  auto dtype = from_dlpack_dtype(arr.dtype());
  RILL_CHECK(dtype.has_value(), Type, "[", api, "] can't convert an array of this dtype (code ",
             static_cast<int>(arr.dtype().code), ", ", static_cast<int>(arr.dtype().bits),
             " bits); supported: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64");
  Shape shape(arr.ndim());
  Strides strides(arr.ndim());
  int64_t extent = 1;
  bool empty = false;
  for (size_t i = 0; i < arr.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(arr.shape(i));
    strides[i] = arr.stride(i);
    RILL_CHECK(strides[i] >= 0, Value, "[", api, "] at least one stride in the given array is negative; "
               "make a copy first (numpy.ascontiguousarray)");
    if (shape[i] == 0) empty = true;
    extent += (shape[i] - 1) * strides[i];
  }
  if (empty) extent = 0;
  size_t nbytes = static_cast<size_t>(extent * dtype_itemsize(*dtype));
  auto* keep = new nb::ndarray<>(arr);
  auto storage = std::make_shared<Storage>(const_cast<void*>(arr.data()), nbytes, Device{}, release_ndarray, keep);
  return Tensor(std::make_shared<TensorImpl>(make_meta(shape, strides, *dtype), std::move(storage), 0));
}

}  // namespace

void init_interop(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def("numpy", [](const Tensor& t, bool force) {
        RILL_CHECK(!t.impl()->requires_grad() || force, Runtime,
                   "[numpy] can't call numpy() on a Tensor that requires grad; use tensor.detach().numpy()");
        RILL_CHECK(t.dtype() != DType::kBFloat16, Type,
                   "[numpy] numpy has no bfloat16; convert first with .float()");
        // force=True copies at once, so the tensor's memory is not shared afterwards.
        nb::object arr = nb::cast(export_array<nb::numpy>(t, "numpy", !force));
        return force ? arr.attr("copy")() : arr;
      }, nb::arg("force") = false, "A numpy array sharing this tensor's memory (a sync point).");
  cls.def("__dlpack__", [](const Tensor& t, nb::kwargs kwargs) {
        nb::object arr = nb::cast(export_array<nb::array_api>(t, "__dlpack__"));  // an object with __dlpack__
        return arr.attr("__dlpack__")(**kwargs);
      }, "Export as a DLPack capsule (zero copy).");
  cls.def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); });
  m.def("from_numpy", [](nb::handle obj) {
        RILL_CHECK(nb::hasattr(obj, "__array_interface__") && nb::hasattr(obj, "dtype"), Type,
                   "[from_numpy] expected a numpy.ndarray, got ", nb::inst_name(obj).c_str());
        nb::ndarray<nb::ro> arr;
        bool ok = nb::try_cast(obj, arr, false);
        RILL_CHECK(ok, Type, "[from_numpy] can't convert this numpy array (dtype ", nb::str(obj.attr("dtype")).c_str(),
                   "); supported: bool, uint8, int8, int16, int32, int64, float16, float32, float64");
        return adopt(arr, "from_numpy");
      }, "A tensor sharing the numpy array's memory.");
  m.def("from_dlpack", [](nb::handle obj) {
        if (nb::isinstance<Tensor>(obj)) return nb::cast<Tensor>(obj);
        RILL_CHECK(nb::hasattr(obj, "__dlpack__") || PyCapsule_CheckExact(obj.ptr()), Type,
                   "[from_dlpack] expected an object with __dlpack__ or a DLPack capsule, got ",
                   nb::inst_name(obj).c_str());
        nb::ndarray<nb::ro> arr;
        bool ok = nb::try_cast(obj, arr, false);
        RILL_CHECK(ok, Type, "[from_dlpack] can't import this object through DLPack (unsupported dtype or device)");
        return adopt(arr, "from_dlpack");
      }, "A tensor sharing the memory of any DLPack producer.");
}

}  // namespace rill::py
