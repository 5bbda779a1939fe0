// The reference interpreter's own duties: checking inputs against declared types.
#include <gtest/gtest.h>

#include "interp/interpreter.h"

namespace kiln::interp {
namespace {

// A graph whose outputs are its inputs: exercises input checking without any op.
std::unique_ptr<ir::Graph> PassThrough() {
  auto g = std::make_unique<ir::Graph>();
  g->name = "pass";
  ir::ValueType a_type{DType::kFloat32, std::vector<ir::Dim>{ir::Dim::Symbol("N"), ir::Dim::Static(3)}};
  ir::ValueType b_type{DType::kFloat32, std::vector<ir::Dim>{ir::Dim::Symbol("N")}};
  ir::Value* a = g->AddValue("a", a_type).value();
  ir::Value* b = g->AddValue("b", b_type).value();
  a->is_graph_input = b->is_graph_input = true;
  g->inputs = {a, b};
  g->outputs = {a, b};
  return g;
}

TEST(Interpreter, RunsWithMatchingInputs) {
  auto g = PassThrough();
  std::vector<Tensor> out;
  Status st = interp::Run(*g, {{"a", Tensor(DType::kFloat32, {2, 3})}, {"b", Tensor(DType::kFloat32, {2})}},
                  &out);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(out.size(), 2u);
}

TEST(Interpreter, RejectsMissingInput) {
  auto g = PassThrough();
  std::vector<Tensor> out;
  Status st = interp::Run(*g, {{"a", Tensor(DType::kFloat32, {2, 3})}}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("missing input 'b'"), std::string::npos) << st.message();
}

TEST(Interpreter, RejectsWrongDtypeAndShape) {
  auto g = PassThrough();
  std::vector<Tensor> out;
  Status st = interp::Run(*g, {{"a", Tensor(DType::kInt64, {2, 3})}, {"b", Tensor(DType::kFloat32, {2})}},
                  &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'a' must be float32, got int64"), std::string::npos) << st.message();
  st = interp::Run(*g, {{"a", Tensor(DType::kFloat32, {2, 4})}, {"b", Tensor(DType::kFloat32, {2})}}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("float32[N,3]"), std::string::npos) << st.message();
}

TEST(Interpreter, RejectsInconsistentSymbolicDims) {
  auto g = PassThrough();
  std::vector<Tensor> out;
  Status st = interp::Run(*g, {{"a", Tensor(DType::kFloat32, {2, 3})}, {"b", Tensor(DType::kFloat32, {5})}},
                  &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'N'"), std::string::npos) << st.message();
}

TEST(Interpreter, RejectsUnknownInputName) {
  auto g = PassThrough();
  std::vector<Tensor> out;
  Status st = interp::Run(*g,
                  {{"a", Tensor(DType::kFloat32, {2, 3})},
                   {"b", Tensor(DType::kFloat32, {2})},
                   {"c", Tensor(DType::kFloat32, {2})}},
                  &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'c' is not an input"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kiln::interp
