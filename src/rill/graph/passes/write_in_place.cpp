// write_in_place: an optimizer update writes the parameter and its state straight into the variables' memory
// (the eager tensors), and an op writes a value the graph returns straight into the launch's output, instead of
// into buffers an assign or an output then copies from.
#include <string>
#include <vector>

#include "rill/graph/op_graph.h"
#include "rill/graph/passes/pass.h"

namespace rill::graph {

// Note [Updates in place]
// assign(v, x) copies x into variable v once v's other readers ran. When x is output o of an op P that updates
// in place (OpFlags::updates_in_place: the optimizer updates, which read each element before writing it) and
// P reads v itself as the input o replaces (ops::updated_input), P can write x over v: the assign is marked
// in_place (the compiler gives P the variable's register as that output and makes the assign a tick after P),
// and every other reader of v, directly or through views, must act before P, so it gets a ctrl edge to P. That
// is only sound when nothing but the assign reads x (a reader of x would read v after later writes), when
// every other reader of v comes before P in the job's order (so none depends on P, and the edges make no
// cycle), when v's memory is dense and row-major (an op writes dense outputs), and with one piece per
// iteration (with gradient accumulation the readers run per piece and P once; the assign keeps its copy).
// An output of the graph is the same, with the launch's output tensor for the variable and no readers to
// order: when only the output op reads x and x is dense and row-major, the output is marked in_place (the
// compiler gives P the output's register, count 1, and makes the output a tick after P).

void write_in_place(Job& job) {
  std::optional<OpGraph> graph;
  write_in_place(job, graph);
}

void write_in_place(Job& job, std::optional<OpGraph>& graph) {
  graph.reset();
  if (job_pieces(job) > 1) return;
  OpGraph& g = graph.emplace(job);
  std::vector<int> reads(g.outputs(), 0);  // by output number: how many op inputs name it
  for (int i = 0; i < g.size(); ++i)
    for (int k = 0; k < g.op(i).inputs_size(); ++k)
      if (const BlobRef p = g.input_producer(i, k); p.op >= 0) ++reads[g.output_number(p)];
  auto mark = [&](OpConf& op, const std::string& producer) {
    plan::AttrValue yes;
    yes.set_b(true);
    (*op.mutable_attrs())["in_place"] = yes;
    add_ctrl(op, producer);
  };
  std::vector<std::pair<int, int>> outputs;   // (output, producer)
  for (int o = 0; o < g.size(); ++o) {
    if (g.op(o).op_type() != kOutput || g.op(o).inputs_size() != 1) continue;
    const BlobRef p = g.input_producer(o, 0);
    if (p.op < 0 || reads[g.output_number(p)] != 1 || is_graph_only(g.op(p.op).op_type())) continue;
    const OpSchema* schema = ops::find(g.op(p.op).op_type());
    if (schema == nullptr || schema->flags.view || p.out >= g.op(p.op).output_descs_size() ||
        !is_row_major(g.op(p.op).output_descs(p.out)))
      continue;
    outputs.emplace_back(o, p.op);
  }
  std::vector<std::pair<int, int>> rewrites;  // (assign, producer)
  std::vector<std::vector<int>> before;       // the readers each producer waits for
  for (int a = 0; a < g.size(); ++a) {
    const int v = g.assign_target(a);
    if (v < 0 || g.op(a).inputs_size() != 2) continue;
    const BlobRef p = g.input_producer(a, 1);
    if (p.op < 0 || reads[g.output_number(p)] != 1) continue;
    const OpConf& producer = g.op(p.op);
    const OpSchema* schema = is_graph_only(producer.op_type()) ? nullptr : ops::find(producer.op_type());
    if (schema == nullptr || !schema->flags.updates_in_place) continue;
    const int k = ops::updated_input(*schema, p.out, producer.inputs_size());
    if (k < 0 || producer.inputs(k) != g.op(v).outputs(0)) continue;
    const plan::TensorDesc& desc = g.op(v).output_descs_size() == 1 ? g.op(v).output_descs(0) : plan::TensorDesc();
    if (!is_row_major(desc)) continue;
    std::vector<int> readers;
    bool ordered = true;
    for (int r : memory_readers(g, v, a)) {
      if (r == p.op) continue;
      ordered = ordered && r < p.op;
      readers.push_back(r);
    }
    // P must read v at input k only: another input naming v would see the values being written.
    int uses = 0;
    for (const std::string& lbn : producer.inputs()) uses += lbn == producer.inputs(k);
    if (!ordered || uses != 1) continue;
    rewrites.emplace_back(a, p.op);
    before.push_back(std::move(readers));
  }
  std::vector<std::pair<int, int>> edges;  // (consumer, producer), in the order the ctrl inputs are added
  for (size_t k = 0; k < rewrites.size(); ++k) {
    const auto [a, p] = rewrites[k];
    OpConf& producer = *job.mutable_ops(p);
    for (int r : before[k]) {
      add_ctrl(producer, job.ops(r).name());
      edges.emplace_back(p, r);
    }
    mark(*job.mutable_ops(a), producer.name());
    edges.emplace_back(a, p);
  }
  for (const auto& [o, p] : outputs) {
    mark(*job.mutable_ops(o), job.ops(p).name());
    edges.emplace_back(o, p);
  }
  g.add_ctrl_edges(edges);
}

}  // namespace rill::graph
