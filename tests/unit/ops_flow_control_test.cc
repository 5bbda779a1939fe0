// If, Loop and Scan run through the reference interpreter on hand-built graphs. Bodies have no
// nodes (their outputs are their inputs or outer-scope values), so these tests depend on no
// other op family.
#include <gtest/gtest.h>

#include <memory>

#include "interp/interpreter.h"
#include "ir/graph.h"

namespace kiln {
namespace {

using ir::ValueType;

ir::Value* Add(ir::Graph& g, const std::string& name, DType t, std::vector<int64_t> dims) {
  auto v = g.AddValue(name, ValueType::Of(t, dims));
  EXPECT_TRUE(v.ok());
  return *v;
}

ir::Value* Input(ir::Graph& g, const std::string& name, DType t, std::vector<int64_t> dims) {
  ir::Value* v = Add(g, name, t, std::move(dims));
  v->is_graph_input = true;
  g.inputs.push_back(v);
  return v;
}

ir::Value* Outer(ir::Graph& body, const ir::Value& v) {
  ir::Value* o = Add(body, v.name, v.type.dtype, v.type.static_dims());
  o->is_outer = true;
  return o;
}

ir::Node* AddNode(ir::Graph& g, const std::string& op, std::vector<ir::Value*> ins,
                  std::vector<ir::Value*> outs, int opset) {
  auto n = std::make_unique<ir::Node>();
  n->op_type = op;
  n->name = op + "_node";
  n->opset = opset;
  n->inputs = std::move(ins);
  n->outputs = std::move(outs);
  for (ir::Value* o : n->outputs) o->producer = n.get();
  return g.AddNode(std::move(n));
}

void SetGraph(ir::Node* n, const std::string& name, std::shared_ptr<ir::Graph> g) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kGraph;
  a.g = std::move(g);
  n->attrs[name] = a;
}

void SetInts(ir::Node* n, const std::string& name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  n->attrs[name] = a;
}

void SetInt(ir::Node* n, const std::string& name, int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  n->attrs[name] = a;
}

TEST(FlowIf, PicksTheBranchAndReadsOuterValues) {
  ir::Graph g;
  ir::Value* cond = Input(g, "cond", DType::kBool, {});
  ir::Value* a = Input(g, "a", DType::kFloat32, {2});
  ir::Value* b = Input(g, "b", DType::kFloat32, {2});
  ir::Value* out = Add(g, "out", DType::kFloat32, {2});
  g.outputs = {out};
  auto then_g = std::make_shared<ir::Graph>();
  then_g->parent = &g;
  then_g->outputs = {Outer(*then_g, *a)};
  auto else_g = std::make_shared<ir::Graph>();
  else_g->parent = &g;
  else_g->outputs = {Outer(*else_g, *b)};
  ir::Node* n = AddNode(g, "If", {cond}, {out}, 13);
  SetGraph(n, "then_branch", then_g);
  SetGraph(n, "else_branch", else_g);

  interp::NamedTensors in = {{"a", Tensor::FromVector<float>({1, 2}, {2})},
                             {"b", Tensor::FromVector<float>({3, 4}, {2})}};
  for (bool c : {true, false}) {
    in["cond"] = Tensor::Scalar<bool>(c);
    std::vector<Tensor> outs;
    ASSERT_TRUE(interp::Run(g, in, &outs).ok());
    EXPECT_EQ(outs[0].ToFloatVector(), c ? (std::vector<float>{1, 2}) : (std::vector<float>{3, 4}));
  }
}

// Loop whose body passes cond and the carried value through and emits the iteration number.
struct LoopGraph {
  ir::Graph g;
  ir::Node* node;
};

std::unique_ptr<LoopGraph> MakeLoop(bool with_m, bool with_cond) {
  auto lg = std::make_unique<LoopGraph>();
  ir::Graph& g = lg->g;
  ir::Value* m = with_m ? Input(g, "M", DType::kInt64, {}) : nullptr;
  ir::Value* cond = with_cond ? Input(g, "cond", DType::kBool, {}) : nullptr;
  ir::Value* v = Input(g, "v", DType::kFloat32, {1});
  ir::Value* v_out = Add(g, "v_out", DType::kFloat32, {1});
  ir::Value* iters = Add(g, "iters", DType::kInt64, {3});
  g.outputs = {v_out, iters};
  auto body = std::make_shared<ir::Graph>();
  body->parent = &g;
  ir::Value* i = Input(*body, "i", DType::kInt64, {});
  ir::Value* c = Input(*body, "c", DType::kBool, {});
  ir::Value* bv = Input(*body, "bv", DType::kFloat32, {1});
  body->outputs = {c, bv, i};
  lg->node = AddNode(g, "Loop", {m, cond, v}, {v_out, iters}, 13);
  SetGraph(lg->node, "body", body);
  return lg;
}

TEST(FlowLoop, TripCountStacksScanOutputs) {
  auto lg = MakeLoop(true, false);
  std::vector<Tensor> outs;
  Status st = interp::Run(lg->g,
                          {{"M", Tensor::Scalar<int64_t>(3)},
                           {"v", Tensor::FromVector<float>({5}, {1})}},
                          &outs);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(outs[0].ToFloatVector(), std::vector<float>{5});
  ASSERT_EQ(outs[1].dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(outs[1].ToFloatVector(), (std::vector<float>{0, 1, 2}));
}

TEST(FlowLoop, FalseConditionRunsZeroTimes) {
  auto lg = MakeLoop(true, true);
  std::vector<Tensor> outs;
  Status st = interp::Run(lg->g,
                          {{"M", Tensor::Scalar<int64_t>(3)},
                           {"cond", Tensor::Scalar<bool>(false)},
                           {"v", Tensor::FromVector<float>({5}, {1})}},
                          &outs);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(outs[1].dims(), (std::vector<int64_t>{0}));  // element type and shape from the body
  EXPECT_EQ(outs[1].dtype(), DType::kInt64);
}

TEST(FlowLoop, EndlessLoopStopsWithAnError) {
  // Neither M nor cond: the body keeps cond true forever.
  auto lg = MakeLoop(false, false);
  std::vector<Tensor> outs;
  Status st = interp::Run(lg->g, {{"v", Tensor::FromVector<float>({5}, {1})}}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("iterations"), std::string::npos) << st.message();
}

TEST(FlowLoop, BodyArityMismatchIsAnError) {
  auto lg = MakeLoop(true, false);
  lg->node->attrs["body"].g->outputs.pop_back();  // no scan output, but the node has two outputs
  std::vector<Tensor> outs;
  EXPECT_FALSE(interp::Run(lg->g,
                           {{"M", Tensor::Scalar<int64_t>(1)},
                            {"v", Tensor::FromVector<float>({5}, {1})}},
                           &outs)
                   .ok());
}

// Scan whose body makes the current element the new state and emits the previous state.
TEST(FlowScan, DirectionsAndOutputAxes) {
  ir::Graph g;
  ir::Value* s0 = Input(g, "s0", DType::kFloat32, {1});
  ir::Value* x = Input(g, "x", DType::kFloat32, {3, 1});
  ir::Value* s_out = Add(g, "s_out", DType::kFloat32, {1});
  ir::Value* ys = Add(g, "ys", DType::kFloat32, {1, 3});
  g.outputs = {s_out, ys};
  auto body = std::make_shared<ir::Graph>();
  body->parent = &g;
  ir::Value* state = Input(*body, "state", DType::kFloat32, {1});
  ir::Value* elem = Input(*body, "elem", DType::kFloat32, {1});
  body->outputs = {elem, state};
  ir::Node* n = AddNode(g, "Scan", {s0, x}, {s_out, ys}, 11);
  SetGraph(n, "body", body);
  SetInt(n, "num_scan_inputs", 1);
  SetInts(n, "scan_output_axes", {-1});

  interp::NamedTensors in = {{"s0", Tensor::FromVector<float>({9}, {1})},
                             {"x", Tensor::FromVector<float>({1, 2, 3}, {3, 1})}};
  std::vector<Tensor> outs;
  ASSERT_TRUE(interp::Run(g, in, &outs).ok());
  EXPECT_EQ(outs[0].ToFloatVector(), std::vector<float>{3});
  EXPECT_EQ(outs[1].dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(outs[1].ToFloatVector(), (std::vector<float>{9, 1, 2}));

  SetInts(n, "scan_input_directions", {1});
  SetInts(n, "scan_output_directions", {1});
  ASSERT_TRUE(interp::Run(g, in, &outs).ok());
  EXPECT_EQ(outs[0].ToFloatVector(), std::vector<float>{1});
  // Inputs read 3, 2, 1; outputs 9, 3, 2 are written back to front.
  EXPECT_EQ(outs[1].ToFloatVector(), (std::vector<float>{2, 3, 9}));

  SetInts(n, "scan_input_directions", {0, 0});  // wrong count
  EXPECT_FALSE(interp::Run(g, in, &outs).ok());
}

}  // namespace
}  // namespace kiln
