#include "rill/vm/instruction.h"

namespace rill::vm {

void Instruction::run() const {
  constexpr size_t kInline = 8;
  TensorArg in_buf[kInline], out_buf[kInline];
  std::vector<TensorArg> in_heap, out_heap;
  TensorArg* in = in_buf;
  TensorArg* out = out_buf;
  if (inputs.size() > kInline) {
    in_heap.resize(inputs.size());
    in = in_heap.data();
  }
  if (outputs.size() > kInline) {
    out_heap.resize(outputs.size());
    out = out_heap.data();
  }
  for (size_t i = 0; i < inputs.size(); ++i) in[i] = {inputs[i].data_ptr(), inputs[i].meta().get()};
  for (size_t i = 0; i < outputs.size(); ++i) out[i] = {outputs[i].data_ptr(), outputs[i].meta().get()};
  KernelContext ctx{*op, {in, inputs.size()}, {out, outputs.size()}, *attrs, scalars};
  kernel(ctx);
}

}  // namespace rill::vm
