#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>

#include "runtime/kernel_registry.h"
#include "runtime/memory_plan.h"

namespace kiln::runtime {

Expected<std::shared_ptr<const CompiledModel>> CompiledModel::Create(
    std::shared_ptr<const Module> module) {
  if (!module) return Status::Error("no module");
  KILN_RETURN_IF_ERROR(module->Validate());
  if (static_cast<int>(module->isa) > static_cast<int>(ActiveIsa()))
    return Status::Error("the module was compiled for ", IsaName(module->isa),
                         " but this CPU (or KILN_ISA) allows only ", IsaName(ActiveIsa()),
                         "; compile it again on this machine");
  std::shared_ptr<CompiledModel> model(new CompiledModel());
  model->module_ = std::move(module);
  for (const Step& step : model->module_->steps) {
    KILN_ASSIGN_OR_RETURN(auto kernel, CreateKernel(step, *model->module_));
    model->kernels_.push_back(std::move(kernel));
  }
  return std::shared_ptr<const CompiledModel>(std::move(model));
}

namespace {

struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t{kArenaAlignment}); }
};
using AlignedBuffer = std::unique_ptr<std::byte, AlignedFree>;

AlignedBuffer AllocateAligned(size_t bytes) {
  return AlignedBuffer(static_cast<std::byte*>(
      ::operator new(std::max<size_t>(bytes, 1), std::align_val_t{kArenaAlignment})));
}

size_t ByteSize(DType dtype, const Dims& dims) {
  size_t n = DTypeSize(dtype);
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace

// Everything a session owns. Indexed by module value id unless named per step.
struct Session::State {
  std::unique_ptr<ThreadPool> pool;
  std::vector<Tensor> slots;              // constants (views of blobs) and activations
  std::vector<const Tensor*> bound;       // what each value reads as during a run
  std::vector<std::optional<Dims>> dims;  // planned dims; nullopt: known only at run time
  std::vector<bool> planned;              // activation lives in the arena
  std::vector<bool> deferred_step;        // an input's dims are unknown until the run
  std::vector<std::vector<const Tensor*>> step_in;
  std::vector<std::vector<Tensor*>> step_out;
  std::vector<Dims> last_input_dims;
  bool has_plan = false;
  AlignedBuffer arena;
  size_t arena_capacity = 0;
  AlignedBuffer workspace;
  size_t workspace_capacity = 0;
  size_t workspace_needed = 0;
  MemoryReport report;
};

Session::Session() : state_(std::make_unique<State>()) {}
Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::Create(std::shared_ptr<const CompiledModel> model,
                                                   const SessionOptions& options) {
  if (!model) return Status::Error("no compiled model");
  if (options.threads < 1) return Status::Error("threads must be at least 1, not ", options.threads);
  std::unique_ptr<Session> session(new Session());
  session->model_ = std::move(model);
  session->options_ = options;
  State& st = *session->state_;
  KILN_ASSIGN_OR_RETURN(st.pool, ThreadPool::Create(static_cast<size_t>(options.threads)));
  const Module& m = session->model_->module();
  const size_t n = m.values.size();
  st.slots.resize(n);
  st.bound.assign(n, nullptr);
  st.dims.assign(n, std::nullopt);
  st.planned.assign(n, false);
  for (size_t v = 0; v < n; ++v) {
    const ValueInfo& info = m.values[v];
    if (info.kind != ValueKind::kConstant) continue;
    // A view of the blob: no copy, the module's weights stay where they are (an mmap).
    auto bytes = m.BlobBytes(info.blob);
    st.slots[v] = Tensor::Borrow(info.dtype, info.dims, const_cast<std::byte*>(bytes.data()),
                                 nullptr);
    st.bound[v] = &st.slots[v];
  }
  st.step_in.resize(m.steps.size());
  st.step_out.resize(m.steps.size());
  st.deferred_step.assign(m.steps.size(), false);
  for (size_t s = 0; s < m.steps.size(); ++s) {
    st.step_in[s].assign(m.steps[s].inputs.size(), nullptr);
    for (int32_t id : m.steps[s].outputs) st.step_out[s].push_back(&st.slots[id]);
  }
  return session;
}

size_t Session::num_outputs() const { return model_->module().outputs.size(); }
const Tensor* Session::value(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= state_->bound.size()) return nullptr;
  return state_->bound[id];
}

size_t Session::threads() const { return state_->pool->threads(); }
MemoryReport Session::memory() const { return state_->report; }

const Tensor& Session::output(size_t i) const {
  static const Tensor kEmpty;
  const Tensor* t = state_->bound[model_->module().outputs.at(i)];
  return t ? *t : kEmpty;
}

Status Session::Reshape(const std::vector<Dims>& input_dims) {
  std::vector<const Dims*> ptrs;
  for (const Dims& d : input_dims) ptrs.push_back(&d);
  return Plan(ptrs);
}

// Shapes forward from the inputs, then lifetimes, then the arena. Steps whose input dims only
// a run can tell are deferred: their outputs are made when they run.
Status Session::Plan(const std::vector<const Dims*>& input_dims) {
  State& st = *state_;
  const Module& m = model_->module();
  if (input_dims.size() != m.inputs.size())
    return Status::Error("the model has ", m.inputs.size(), " inputs, ", input_dims.size(),
                         " were given");
  st.has_plan = false;
  for (size_t v = 0; v < m.values.size(); ++v)
    if (m.values[v].kind != ValueKind::kConstant) st.dims[v].reset();
    else st.dims[v] = m.values[v].dims;
  for (size_t i = 0; i < m.inputs.size(); ++i) st.dims[m.inputs[i]] = *input_dims[i];
  std::fill(st.planned.begin(), st.planned.end(), false);
  std::vector<const Dims*> in_dims;
  std::vector<std::optional<Dims>> out_dims;
  st.workspace_needed = 0;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step& step = m.steps[s];
    in_dims.clear();
    bool known = true;
    for (int32_t id : step.inputs) {
      if (id < 0) {
        in_dims.push_back(nullptr);
        continue;
      }
      known = known && st.dims[id].has_value();
      in_dims.push_back(st.dims[id] ? &*st.dims[id] : nullptr);
    }
    st.deferred_step[s] = !known;
    if (!known) continue;
    out_dims.assign(step.outputs.size(), std::nullopt);
    KILN_RETURN_IF_ERROR(model_->kernel(s).InferShapes(in_dims, &out_dims)
                             .WithContext(StrCat("step '", step.name, "' (", step.op, "): ")));
    if (out_dims.size() != step.outputs.size())
      return Status::Error("step '", step.name, "' inferred ", out_dims.size(), " outputs, not ",
                           step.outputs.size());
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      st.dims[step.outputs[o]] = out_dims[o];
      st.planned[step.outputs[o]] = out_dims[o].has_value();
    }
    st.workspace_needed =
        std::max(st.workspace_needed, model_->kernel(s).WorkspaceBytes(in_dims, threads()));
  }

  // Lifetimes of planned activations: born at the producing step, dead after the last reader;
  // graph outputs live to the end so the caller can read them after the run.
  const auto last_step = static_cast<int32_t>(m.steps.size());
  std::vector<int32_t> request_of(m.values.size(), -1);
  std::vector<BufferRequest> requests;
  std::vector<int32_t> value_of;
  for (size_t s = 0; s < m.steps.size(); ++s)
    for (int32_t id : m.steps[s].outputs)
      if (st.planned[id]) {
        BufferRequest r;
        r.bytes = ByteSize(m.values[id].dtype, *st.dims[id]);
        r.first = r.last = static_cast<int32_t>(s);
        request_of[id] = static_cast<int32_t>(requests.size());
        requests.push_back(r);
        value_of.push_back(id);
      }
  for (size_t s = 0; s < m.steps.size(); ++s)
    for (int32_t id : m.steps[s].inputs)
      if (id >= 0 && request_of[id] >= 0)
        requests[request_of[id]].last = std::max(requests[request_of[id]].last, static_cast<int32_t>(s));
  for (int32_t id : m.outputs)
    if (request_of[id] >= 0) requests[request_of[id]].last = last_step;
  PlaceConcatInputs(request_of, requests);
  for (size_t s = 0; s < m.steps.size(); ++s) {
    if (st.deferred_step[s]) continue;
    for (auto [o, i] : model_->kernel(s).InPlace()) {
      const Step& step = m.steps[s];
      if (o < 0 || i < 0 || static_cast<size_t>(o) >= step.outputs.size() ||
          static_cast<size_t>(i) >= step.inputs.size() || step.inputs[i] < 0)
        continue;
      const int32_t out_req = request_of[step.outputs[o]];
      const int32_t in_req = request_of[step.inputs[i]];
      // Only when this step is the input's last reader (and it reads it once).
      if (out_req < 0 || in_req < 0 || requests[in_req].last != static_cast<int32_t>(s) ||
          std::count(step.inputs.begin(), step.inputs.end(), step.inputs[i]) != 1)
        continue;
      requests[out_req].in_place_of = in_req;
    }
  }
  const MemoryPlan plan = PlanMemory(requests);
  if (plan.arena_bytes > st.arena_capacity) {
    st.arena.reset();  // the old arena goes first: peak memory is the new size, not the sum
    st.arena = AllocateAligned(plan.arena_bytes);
    st.arena_capacity = plan.arena_bytes;
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const int32_t id = value_of[r];
    st.slots[id] = Tensor::Borrow(m.values[id].dtype, *st.dims[id], st.arena.get() + plan.offsets[r],
                                  nullptr);
  }
  if (st.workspace_needed > st.workspace_capacity) {
    st.workspace.reset();
    st.workspace = AllocateAligned(st.workspace_needed);
    st.workspace_capacity = st.workspace_needed;
  }
  st.report.arena_bytes = plan.arena_bytes;
  st.report.intermediate_bytes = plan.total_bytes;
  st.report.workspace_bytes = st.workspace_needed;
  st.report.dynamic_values = 0;
  for (size_t v = 0; v < m.values.size(); ++v)
    if (m.values[v].kind == ValueKind::kActivation && !st.planned[v]) ++st.report.dynamic_values;
  st.last_input_dims.clear();
  for (const Dims* d : input_dims) st.last_input_dims.push_back(*d);
  st.has_plan = true;
  return Status::Ok();
}

// Concats of one image copy each input into a contiguous range of the output. Placing the
// inputs' buffers there (views, memory_plan.h) lets their producers write in place and the
// copies vanish. A concat whose inputs begin with all of an earlier concat's inputs (DenseNet:
// each layer concatenates every feature so far) takes that concat's output as a view at offset
// 0 first, so a whole dense block shares one buffer and no feature is copied. Values the caller
// sees (graph outputs) and values already placed stay as they are; the kernels skip a copy only
// when the pointers say it is done, so a binding the plan did not foresee stays correct.
void Session::PlaceConcatInputs(const std::vector<int32_t>& request_of,
                                std::vector<BufferRequest>& requests) const {
  const State& st = *state_;
  const Module& m = model_->module();
  std::vector<bool> is_output(m.values.size(), false);
  for (int32_t id : m.outputs) is_output[id] = true;
  struct Concat {
    size_t step;
    std::vector<size_t> ranges;
  };
  std::vector<Concat> concats;
  std::vector<const Dims*> in_dims;
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step& step = m.steps[s];
    if (st.deferred_step[s] || step.outputs.size() != 1 || request_of[step.outputs[0]] < 0)
      continue;
    in_dims.clear();
    for (int32_t id : step.inputs) in_dims.push_back(id >= 0 && st.dims[id] ? &*st.dims[id] : nullptr);
    std::vector<size_t> ranges = model_->kernel(s).InputRangesInOutput(in_dims);
    if (ranges.size() == step.inputs.size()) concats.push_back({s, std::move(ranges)});
  }
  auto placeable = [&](int32_t id) {
    return id >= 0 && request_of[id] >= 0 && !is_output[id] &&
           requests[request_of[id]].view_of < 0;
  };
  for (size_t a = 0; a < concats.size(); ++a) {
    const Step& sa = m.steps[concats[a].step];
    if (!placeable(sa.outputs[0])) continue;
    for (size_t b = a + 1; b < concats.size(); ++b) {
      const Step& sb = m.steps[concats[b].step];
      if (sb.inputs.size() <= sa.inputs.size() ||
          !std::equal(sa.inputs.begin(), sa.inputs.end(), sb.inputs.begin()))
        continue;
      BufferRequest& r = requests[request_of[sa.outputs[0]]];
      r.view_of = request_of[sb.outputs[0]];
      r.view_offset = 0;
      break;
    }
  }
  for (const Concat& c : concats) {
    const Step& step = m.steps[c.step];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int32_t id = step.inputs[i];
      if (!placeable(id) || id == step.outputs[0] ||
          std::count(step.inputs.begin(), step.inputs.end(), id) != 1)
        continue;
      BufferRequest& r = requests[request_of[id]];
      r.view_of = request_of[step.outputs[0]];
      r.view_offset = c.ranges[i];
    }
  }
}

Status Session::RunStep(size_t s) {
  State& st = *state_;
  const Module& m = model_->module();
  const Step& step = m.steps[s];
  const StepKernel& kernel = model_->kernel(s);
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const int32_t id = step.inputs[i];
    st.step_in[s][i] = id < 0 ? nullptr : st.bound[id];
    if (id >= 0 && (st.bound[id] == nullptr || !st.bound[id]->defined()))
      return Status::Error("step '", step.name, "' reads '", m.values[id].name,
                           "', which no step produced");
  }
  std::byte* workspace = st.workspace.get();
  size_t workspace_bytes = st.workspace_capacity;
  if (st.deferred_step[s]) {
    // Input dims known only now: size the outputs and scratch for this run (this allocates).
    std::vector<Dims> holder;
    std::vector<const Dims*> in_dims;
    for (const Tensor* t : st.step_in[s]) in_dims.push_back(t ? &t->dims() : nullptr);
    std::vector<std::optional<Dims>> out_dims(step.outputs.size());
    KILN_RETURN_IF_ERROR(kernel.InferShapes(in_dims, &out_dims)
                             .WithContext(StrCat("step '", step.name, "' (", step.op, "): ")));
    for (size_t o = 0; o < step.outputs.size(); ++o) {
      Tensor& slot = st.slots[step.outputs[o]];
      if (o < out_dims.size() && out_dims[o]) {
        KILN_ASSIGN_OR_RETURN(slot, Tensor::Make(m.values[step.outputs[o]].dtype, *out_dims[o],
                                                 "output of step '" + step.name + "'"));
      } else {
        slot = Tensor();
      }
    }
    const size_t need = kernel.WorkspaceBytes(in_dims, threads());
    if (need > st.workspace_capacity) {
      st.workspace.reset();
      st.workspace = AllocateAligned(need);
      st.workspace_capacity = need;
    }
    workspace = st.workspace.get();
    workspace_bytes = st.workspace_capacity;
  } else {
    for (int32_t id : step.outputs)
      if (!st.planned[id]) st.slots[id] = Tensor();
  }
  StepArgs args;
  args.inputs = st.step_in[s];
  args.outputs = st.step_out[s];
  args.workspace = workspace;
  args.workspace_bytes = workspace_bytes;
  args.pool = st.pool.get();
  // The context string is built only on failure: a run at a planned shape allocates nothing.
  if (Status status = kernel.Run(args); !status.ok())
    return status.WithContext(StrCat("step '", step.name, "' (", step.op, "): "));
  for (int32_t id : step.outputs) {
    const Tensor& t = st.slots[id];
    if (!t.defined() || t.dtype() != m.values[id].dtype)
      return Status::Error("step '", step.name, "' (", step.op, ") did not produce '",
                           m.values[id].name, "' as ", DTypeName(m.values[id].dtype));
    st.bound[id] = &st.slots[id];
  }
  return Status::Ok();
}

Status Session::Run(std::span<const Tensor* const> inputs, const StepTimeFn& on_step) {
  State& st = *state_;
  const Module& m = model_->module();
  if (inputs.size() != m.inputs.size())
    return Status::Error("the model has ", m.inputs.size(), " inputs, ", inputs.size(),
                         " were given");
  bool same_dims = st.has_plan;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& info = m.values[m.inputs[i]];
    const Tensor* t = inputs[i];
    if (t == nullptr || !t->defined())
      return Status::Error("input '", info.name, "' is missing");
    if (t->dtype() != info.dtype)
      return Status::Error("input '", info.name, "' must be ", DTypeName(info.dtype), ", not ",
                           DTypeName(t->dtype()));
    if (info.rank_known && options_.check_input_dims) {
      if (t->dims().size() != info.dims.size())
        return Status::Error("input '", info.name, "' must have rank ", info.dims.size(),
                             ", not ", t->dims().size(), " (", DimsToString(t->dims()), ")");
      for (size_t d = 0; d < info.dims.size(); ++d)
          if (info.dims[d] >= 0 && t->dims()[d] != info.dims[d])
            return Status::Error("input '", info.name, "' has dims ", DimsToString(t->dims()),
                                 " but the model needs ", DimsToString(info.dims),
                                 " (dim ", d, " is fixed)");
    }
    same_dims = same_dims && st.last_input_dims[i] == t->dims();
  }
  try {
    if (!same_dims) {
      std::vector<const Dims*> dims;
      for (const Tensor* t : inputs) dims.push_back(&t->dims());
      KILN_RETURN_IF_ERROR(Plan(dims));
    }
    for (size_t i = 0; i < inputs.size(); ++i) st.bound[m.inputs[i]] = inputs[i];
    for (size_t s = 0; s < m.steps.size(); ++s) {
      if (on_step) {
        const auto t0 = std::chrono::steady_clock::now();
        KILN_RETURN_IF_ERROR(RunStep(s));
        const auto t1 = std::chrono::steady_clock::now();
        on_step(s, std::chrono::duration<double, std::milli>(t1 - t0).count());
      } else {
        KILN_RETURN_IF_ERROR(RunStep(s));
      }
    }
  } catch (const std::bad_alloc&) {
    return Status::Error("out of memory while running the model");
  } catch (const std::exception& e) {
    return Status::Error("the run failed: ", e.what());
  }
  return Status::Ok();
}

}  // namespace kiln::runtime
