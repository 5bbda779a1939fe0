// The ONNX importer on models built in memory: mapping, opset normalization, printing.
#include <gtest/gtest.h>

#include "frontend/onnx/importer.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx.pb.h"
#include "ops/op_registry.h"

namespace kiln::onnx {
namespace {

::onnx::ModelProto MakeModel(int opset) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  auto* imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

void AddInput(::onnx::GraphProto* g, const std::string& name, int elem,
              std::vector<std::string> dims) {
  auto* vi = g->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (const auto& d : dims) {
    auto* dim = tt->mutable_shape()->add_dim();
    if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
    else dim->set_dim_param(d);
  }
}

Expected<ir::Model> Load(const ::onnx::ModelProto& m) {
  return LoadModelFromBytes(m.SerializeAsString(), "");
}

TEST(OnnxImporter, MapsInputsInitializersAndSymbolicDims) {
  auto m = MakeModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {"N", "3"});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(3);
  for (float f : {1.f, 2.f, 3.f}) w->add_float_data(f);
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->set_name("add");
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  g->add_output()->set_name("y");

  auto model = Load(m);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Graph& graph = *model->graph;
  ASSERT_EQ(graph.inputs.size(), 1u);
  EXPECT_EQ(graph.inputs[0]->type.ToString(), "float32[N,3]");
  const ir::Value* wv = graph.FindValue("w");
  ASSERT_NE(wv, nullptr);
  ASSERT_TRUE(wv->constant.has_value());
  EXPECT_EQ(wv->constant->data<float>()[2], 3.f);
  EXPECT_TRUE(ir::Verify(graph).ok());
  EXPECT_NE(ir::PrintGraph(graph).find("%y = Add(%x, %w)"), std::string::npos)
      << ir::PrintGraph(graph);
}

TEST(OnnxImporter, MovesOldAttributesToInputs) {
  auto m = MakeModel(11);
  auto* g = m.mutable_graph();
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {"1", "3", "1"});
  auto* n = g->add_node();
  n->set_op_type("Squeeze");
  n->set_name("sq");
  n->add_input("x");
  n->add_output("y");
  auto* axes = n->add_attribute();
  axes->set_name("axes");
  axes->set_type(::onnx::AttributeProto::INTS);
  axes->add_ints(0);
  axes->add_ints(2);
  g->add_output()->set_name("y");

  auto model = Load(m);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Node& node = *model->graph->nodes()[0];
  EXPECT_EQ(node.attr("axes"), nullptr);
  ASSERT_TRUE(node.has_input(1));
  ASSERT_TRUE(node.inputs[1]->constant.has_value());
  EXPECT_EQ(node.inputs[1]->constant->dtype(), DType::kInt64);
  EXPECT_EQ(node.inputs[1]->constant->data<int64_t>()[1], 2);
}

TEST(OnnxImporter, KeepsNewFormUntouched) {
  auto m = MakeModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {"1", "3"});
  AddInput(g, "axes", ::onnx::TensorProto::INT64, {"1"});
  auto* n = g->add_node();
  n->set_op_type("Squeeze");
  n->add_input("x");
  n->add_input("axes");
  n->add_output("y");
  g->add_output()->set_name("y");
  auto model = Load(m);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->graph->nodes()[0]->inputs[1]->name, "axes");
  EXPECT_EQ(model->graph->nodes()[0]->name, "Squeeze_0");  // unnamed nodes get a stable name
}

TEST(OnnxImporter, ReportsEveryUnsupportedOpAtOnce) {
  auto m = MakeModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {"2"});
  for (const char* op : {"FrobnicateA", "FrobnicateB"}) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(std::string("n_") + op);
    n->add_input(g->node_size() == 1 ? "x" : "a");
    n->add_output(g->node_size() == 1 ? "a" : "b");
  }
  g->add_output()->set_name("b");
  auto model = Load(m);
  ASSERT_TRUE(model.ok()) << model.status().message();
  Status st = ops::CheckSupported(*model->graph);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("FrobnicateA (opset 13) at node 'n_FrobnicateA'"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("FrobnicateB"), std::string::npos) << st.message();
}

TEST(OnnxImporter, SubgraphsResolveOuterNames) {
  auto m = MakeModel(13);
  auto* g = m.mutable_graph();
  AddInput(g, "c", ::onnx::TensorProto::BOOL, {});
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {"2"});
  auto* n = g->add_node();
  n->set_op_type("If");
  n->add_input("c");
  n->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = n->add_attribute();
    a->set_name(branch);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* body = a->mutable_g();
    body->set_name(branch);
    auto* id = body->add_node();
    id->set_op_type("Identity");
    id->add_input("x");  // from the enclosing graph
    id->add_output(std::string(branch) + "_out");
    body->add_output()->set_name(std::string(branch) + "_out");
  }
  g->add_output()->set_name("y");
  auto model = Load(m);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const ir::Attribute* then_branch = model->graph->nodes()[0]->attr("then_branch");
  ASSERT_NE(then_branch, nullptr);
  const ir::Value* outer = then_branch->g->FindValue("x");
  ASSERT_NE(outer, nullptr);
  EXPECT_TRUE(outer->is_outer);
}

}  // namespace
}  // namespace kiln::onnx
