// Small builders for the hostile-input tests: ONNX models made with ONNX's own protobuf classes,
// a temporary folder, and the one assertion every hostile case makes (it fails, with one line
// that names the problem).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/onnx/importer.h"
#include "onnx.pb.h"
#include "support/status.h"

namespace kiln::hostile {

inline ::onnx::ModelProto MakeModel(int opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("hostile_test");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

inline void SetType(::onnx::ValueInfoProto* vi, int elem_type, const std::vector<int64_t>& dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

inline void AddInput(::onnx::GraphProto* g, const std::string& name, int elem_type,
                     const std::vector<int64_t>& dims) {
  auto* vi = g->add_input();
  vi->set_name(name);
  SetType(vi, elem_type, dims);
}

// An output with no declared type: kiln infers it.
inline void AddOutput(::onnx::GraphProto* g, const std::string& name) {
  g->add_output()->set_name(name);
}

inline ::onnx::NodeProto* AddNode(::onnx::GraphProto* g, const std::string& op,
                                  const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs,
                                  const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline ::onnx::TensorProto* AddInit(::onnx::GraphProto* g, const std::string& name, int dtype,
                                    const std::vector<int64_t>& dims, const std::string& raw) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  return t;
}

inline void AddIntsAttr(::onnx::NodeProto* n, const std::string& name,
                        const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// x: float32[2,3] -> Identity 'id' -> y
inline ::onnx::ModelProto IdentityModel() {
  auto m = MakeModel();
  auto* g = m.mutable_graph();
  AddInput(g, "x", ::onnx::TensorProto::FLOAT, {2, 3});
  AddNode(g, "Identity", {"x"}, {"y"}, "id");
  AddOutput(g, "y");
  return m;
}

// One initializer 'w' that is also the graph's output.
inline ::onnx::ModelProto InitializerModel(int dtype, const std::vector<int64_t>& dims,
                                           const std::string& raw) {
  auto m = MakeModel();
  AddInit(m.mutable_graph(), "w", dtype, dims, raw);
  AddOutput(m.mutable_graph(), "w");
  return m;
}

inline std::string Serialize(const ::onnx::ModelProto& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

inline Status Load(const ::onnx::ModelProto& m) {
  return onnx::LoadModelFromBytes(Serialize(m), "").status();
}

// The assertion of every hostile case: an error, one line, naming each of `parts`.
inline void ExpectError(const Status& st, std::initializer_list<std::string_view> parts) {
  ASSERT_FALSE(st.ok()) << "accepted silently; expected an error naming "
                        << (parts.size() ? *parts.begin() : "anything");
  const std::string& msg = st.message();
  // KILN_HOSTILE_PRINT=1 lists every message, to review how they read.
  if (std::getenv("KILN_HOSTILE_PRINT") != nullptr)
    std::printf("  error: %s\n", msg.c_str());
  EXPECT_FALSE(msg.empty());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "not one line: " << msg;
  for (std::string_view p : parts)
    EXPECT_NE(msg.find(p), std::string::npos) << "message lacks '" << p << "': " << msg;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder under the system's temp folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln_hostile_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& rel) const { return path_ + "/" + rel; }
  // Writes `bytes` to path()/rel (making folders) and returns the full path.
  std::string Write(const std::string& rel, std::string_view bytes) const {
    const std::string full = Sub(rel);
    std::filesystem::create_directories(std::filesystem::path(full).parent_path());
    std::ofstream out(full, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return full;
  }

 private:
  std::string path_;
};

}  // namespace kiln::hostile
